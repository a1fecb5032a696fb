// The model being edited: a ModelSpec, its undo stack, its file, and its validation under the
// run's precision policy. Every user edit reaches the spec through an undo command
// (layer_commands.h) that calls one of the editing functions below; they emit one signal per kind
// of change so that views keep their selection instead of resetting.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/precision.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/model_weights.h"
#include "engine/spec/shape_inference.h"

class QUndoStack;

namespace mixlab::ui {

// The model-level fields (all but the layers), edited by EditModelCommand.
struct ModelHeader {
  std::string name;
  Shape input_shape;
  LossKind loss = LossKind::sparse_categorical_crossentropy;

  friend bool operator==(const ModelHeader&, const ModelHeader&) = default;
};

class ModelDocument : public QObject {
  Q_OBJECT

 public:
  // The engine's verdict on the spec: infer_shapes under the policy, recomputed on every change.
  struct Validation {
    bool ok = false;
    QString message;                  // the engine's message when !ok
    int layer = -1;                   // the offending layer, or -1 when the error is not one's
    std::optional<ShapeTable> table;  // when ok
    // When !ok: the figures of the layers above the offending one, so the editor still shows
    // them while the user fixes the stack.
    std::vector<LayerInfo> layers_before_error;
  };

  explicit ModelDocument(QObject* parent = nullptr);
  ~ModelDocument() override;

  const ModelSpec& spec() const;
  QUndoStack* undo_stack() const;
  const Validation& validation() const;
  // Layer `index`'s figures: from the table when the stack is valid, else for the layers above
  // the offending one; nullptr for the others (and for an index out of range).
  const LayerInfo* layer_info(int index) const;

  void set_policy(Policy policy);
  Policy policy() const;

  QString file_path() const;     // empty for a template or a new model
  QString display_name() const;  // the file name, the template's name, or "Untitled"
  bool is_modified() const;      // the undo stack is away from its clean state

  // Replaces the model (New, Open, a template): clears the undo history and marks it clean.
  void reset(ModelSpec spec, QString file_path = {}, QString display_name = {});
  // Reads a model file: MixLab's JSON, or a Keras file (Keras 3 / tf.keras 2 JSON, a .keras
  // archive), which becomes a new unsaved model named after the file (saving writes MixLab JSON
  // elsewhere, never over the Keras file) and sets the policy the file names. On failure returns
  // false, leaves the model as it was and sets *error to the engine's message, which names the
  // file.
  bool load(const QString& path, QString* error);

  // What the last Keras import brought besides the layers.
  struct Import {
    QString path;
    std::string format;                 // "Keras 3 archive (.keras)", ...
    std::vector<std::string> warnings;  // fields read but not modelled
    std::shared_ptr<const ModelWeights> weights;
    ModelSpec spec;  // the spec as imported: the weights fit it
  };
  // The last import, or nullptr when the model was not imported (or was replaced since).
  const Import* last_import() const;
  // The imported starting weights while the model's parameters are still the imported ones
  // (same layers, same shapes); null otherwise: a run then starts from its seed's weights.
  std::shared_ptr<const ModelWeights> initial_weights() const;
  // Writes the engine's JSON to path + ".tmp", then renames it over `path`, so a failed write
  // never leaves half a file. Marks the model clean and makes `path` its file.
  bool save(const QString& path, QString* error);

  // Editing, for the undo commands. Indexes must be valid.
  void insert_layer(int index, LayerSpec layer);
  void remove_layer(int index);
  void move_layer(int from, int to);  // afterwards the layer is at `to`
  void set_layer(int index, LayerSpec layer);
  ModelHeader header() const;
  void set_header(ModelHeader header);
  void set_input_shape(Shape shape);
  void set_loss(LossKind loss);

  // The spec File > New starts from: an image input the size of Fashion-MNIST and no layers.
  static ModelSpec new_model_spec();

 signals:
  void changed();  // the spec, its validation or the policy changed
  void modified_changed(bool modified);
  void file_path_changed(const QString& path);
  void display_name_changed(const QString& name);
  // Finer signals for item models and views that keep a selection: "about to" before the spec
  // changes (Qt's begin*Rows must see the old rows), the others after it, before changed().
  void layer_about_to_be_inserted(int index);
  void layer_inserted(int index);
  void layer_about_to_be_removed(int index);
  void layer_removed(int index);
  void layer_about_to_be_moved(int from, int to);
  void layer_moved(int from, int to);
  void layer_changed(int index);
  void about_to_reset();
  void model_reset();
  // A Keras file was imported (after model_reset): last_import() says what it brought.
  void imported();

 private:
  bool valid_index(int index) const;
  void revalidate();
  void set_file(const QString& path, const QString& display_name);
  std::optional<Import> import_;

  ModelSpec spec_;
  Policy policy_ = Policy::float32;
  QUndoStack* undo_stack_;
  Validation validation_;
  QString file_path_;
  QString display_name_;
};

}  // namespace mixlab::ui
