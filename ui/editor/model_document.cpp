#include "ui/editor/model_document.h"

#include <unistd.h>

#include <QFile>
#include <QFileInfo>
#include <QUndoStack>
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "ui/output_file.h"

namespace mixlab::ui {
namespace {

std::filesystem::path to_fs_path(const QString& path) {
  return std::filesystem::path(QFile::encodeName(path).toStdString());
}

// The figures of layers [0, count) of a spec whose layer `count` is invalid. Each layer's figures
// depend only on the layers above it, so the prefix gives the same numbers; a Flatten appended
// keeps the prefix's own output check from failing.
std::vector<LayerInfo> infos_before(const ModelSpec& spec, int count, Policy policy) {
  if (count <= 0 || count > static_cast<int>(spec.layers.size())) return {};
  ModelSpec prefix = spec;
  prefix.layers.resize(static_cast<std::size_t>(count));
  LayerSpec flatten;
  flatten.type = LayerType::Flatten;
  prefix.layers.push_back(flatten);
  try {
    std::vector<LayerInfo> infos = infer_shapes(prefix, policy).layers;
    infos.resize(static_cast<std::size_t>(count));
    return infos;
  } catch (const std::exception&) {
    return {};  // only the figures are lost; the error shown is the full spec's
  }
}

}  // namespace

ModelDocument::ModelDocument(QObject* parent)
    : QObject(parent), spec_(new_model_spec()), undo_stack_(new QUndoStack(this)) {
  display_name_ = tr("Untitled");
  connect(undo_stack_, &QUndoStack::cleanChanged, this,
          [this](bool clean) { emit modified_changed(!clean); });
  revalidate();
}

ModelDocument::~ModelDocument() = default;

const ModelSpec& ModelDocument::spec() const {
  return spec_;
}
QUndoStack* ModelDocument::undo_stack() const {
  return undo_stack_;
}
const ModelDocument::Validation& ModelDocument::validation() const {
  return validation_;
}
const LayerInfo* ModelDocument::layer_info(int index) const {
  if (index < 0) return nullptr;
  const auto i = static_cast<std::size_t>(index);
  const Validation& v = validation_;
  if (v.table && i < v.table->layers.size()) return &v.table->layers[i];
  if (!v.ok && i < v.layers_before_error.size()) return &v.layers_before_error[i];
  return nullptr;
}

Policy ModelDocument::policy() const {
  return policy_;
}
QString ModelDocument::file_path() const {
  return file_path_;
}
QString ModelDocument::display_name() const {
  return display_name_;
}
bool ModelDocument::is_modified() const {
  return !undo_stack_->isClean();
}

ModelSpec ModelDocument::new_model_spec() {
  ModelSpec spec;
  spec.name = "model";
  spec.input_shape = {28, 28, 1};
  return spec;
}

void ModelDocument::set_policy(Policy policy) {
  if (policy == policy_) return;
  policy_ = policy;
  revalidate();
  emit changed();
}

void ModelDocument::reset(ModelSpec spec, QString file_path, QString display_name) {
  // Commands hold indexes into the old spec: drop them first.
  undo_stack_->clear();
  import_.reset();
  emit about_to_reset();
  spec_ = std::move(spec);
  revalidate();
  if (display_name.isEmpty())
    display_name = file_path.isEmpty() ? tr("Untitled") : QFileInfo(file_path).fileName();
  set_file(file_path, display_name);
  emit model_reset();
  emit changed();
}

bool ModelDocument::load(const QString& path, QString* error) {
  try {
    ImportedModel model = load_model_source(to_fs_path(path));
    if (model.format == "MixLab JSON") {
      reset(std::move(model.spec), path);
      return true;
    }
    Import import{path, model.format, std::move(model.warnings), model.weights, model.spec};
    reset(std::move(model.spec), {}, QFileInfo(path).fileName());
    import_ = std::move(import);
    if (model.policy) set_policy(*model.policy);
    emit imported();
    return true;
  } catch (const std::exception& e) {
    // The engine's messages start with the file name.
    if (error != nullptr) *error = QString::fromStdString(e.what());
    return false;
  }
}

const ModelDocument::Import* ModelDocument::last_import() const {
  return import_ ? &*import_ : nullptr;
}

std::shared_ptr<const ModelWeights> ModelDocument::initial_weights() const {
  if (!import_ || !import_->weights) return nullptr;
  // Names, activations, dropout rates and the like may change; the parameters' shapes may not.
  try {
    const ShapeTable now = infer_shapes(spec_);
    const ShapeTable then = infer_shapes(import_->spec);
    if (now.layers.size() != then.layers.size()) return nullptr;
    for (std::size_t i = 0; i < now.layers.size(); ++i) {
      if (now.layers[i].type != then.layers[i].type) return nullptr;
      const auto& a = now.layers[i].params;
      const auto& b = then.layers[i].params;
      if (a.size() != b.size()) return nullptr;
      for (std::size_t j = 0; j < a.size(); ++j) {
        if (a[j].kind != b[j].kind || a[j].shape != b[j].shape) return nullptr;
      }
    }
  } catch (const Error&) {
    return nullptr;
  }
  return import_->weights;
}

bool ModelDocument::save(const QString& path, QString* error) {
  const auto fail = [error](const QString& message) {
    if (error != nullptr) *error = message;
    return false;
  };
  std::string text;
  try {
    text = to_json(spec_);
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  if (const QString refused = output_refusal(path); !refused.isEmpty()) return fail(refused);
  const QString tmp_path = path + QStringLiteral(".tmp");
  QFile file(tmp_path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
    return fail(tr("%1: cannot write: %2").arg(tmp_path, file.errorString()));
  const auto size = static_cast<qint64>(text.size());
  // fsync before the rename: otherwise a crash can leave the renamed file empty.
  if (file.write(text.data(), size) != size || !file.flush() || ::fsync(file.handle()) != 0) {
    const QString reason = file.errorString();
    file.close();
    QFile::remove(tmp_path);
    return fail(tr("%1: cannot write: %2").arg(tmp_path, reason));
  }
  file.close();
  std::error_code ec;
  std::filesystem::rename(to_fs_path(tmp_path), to_fs_path(path), ec);
  if (ec) {
    QFile::remove(tmp_path);
    return fail(tr("%1: cannot replace the file: %2")
                    .arg(path, QString::fromLocal8Bit(ec.message().c_str())));
  }
  set_file(path, QFileInfo(path).fileName());
  undo_stack_->setClean();
  return true;
}

bool ModelDocument::valid_index(int index) const {
  return index >= 0 && index < static_cast<int>(spec_.layers.size());
}

void ModelDocument::insert_layer(int index, LayerSpec layer) {
  Q_ASSERT(index >= 0 && index <= static_cast<int>(spec_.layers.size()));
  if (index < 0 || index > static_cast<int>(spec_.layers.size())) return;
  emit layer_about_to_be_inserted(index);
  spec_.layers.insert(spec_.layers.begin() + index, std::move(layer));
  revalidate();
  emit layer_inserted(index);
  emit changed();
}

void ModelDocument::remove_layer(int index) {
  Q_ASSERT(valid_index(index));
  if (!valid_index(index)) return;
  emit layer_about_to_be_removed(index);
  spec_.layers.erase(spec_.layers.begin() + index);
  revalidate();
  emit layer_removed(index);
  emit changed();
}

void ModelDocument::move_layer(int from, int to) {
  Q_ASSERT(valid_index(from) && valid_index(to));
  if (!valid_index(from) || !valid_index(to) || from == to) return;
  emit layer_about_to_be_moved(from, to);
  const auto first = spec_.layers.begin();
  if (from < to)
    std::rotate(first + from, first + from + 1, first + to + 1);
  else
    std::rotate(first + to, first + from, first + from + 1);
  revalidate();
  emit layer_moved(from, to);
  emit changed();
}

void ModelDocument::set_layer(int index, LayerSpec layer) {
  Q_ASSERT(valid_index(index));
  if (!valid_index(index)) return;
  spec_.layers[static_cast<std::size_t>(index)] = std::move(layer);
  revalidate();
  emit layer_changed(index);
  emit changed();
}

ModelHeader ModelDocument::header() const {
  return {spec_.name, spec_.input_shape, spec_.loss};
}

void ModelDocument::set_header(ModelHeader header) {
  spec_.name = std::move(header.name);
  spec_.input_shape = std::move(header.input_shape);
  spec_.loss = header.loss;
  revalidate();
  emit changed();
}

void ModelDocument::set_input_shape(Shape shape) {
  ModelHeader h = header();
  h.input_shape = std::move(shape);
  set_header(std::move(h));
}

void ModelDocument::set_loss(LossKind loss) {
  ModelHeader h = header();
  h.loss = loss;
  set_header(std::move(h));
}

void ModelDocument::revalidate() {
  Validation v;
  try {
    v.table = infer_shapes(spec_, policy_);
    v.ok = true;
  } catch (const SpecError& e) {
    v.message = QString::fromStdString(e.what());
    v.layer = e.layer();
    v.layers_before_error = infos_before(spec_, v.layer, policy_);
  } catch (const std::exception& e) {
    v.message = QString::fromStdString(e.what());
  }
  validation_ = std::move(v);
}

void ModelDocument::set_file(const QString& path, const QString& display_name) {
  const bool path_changed = path != file_path_;
  const bool name_changed = display_name != display_name_;
  file_path_ = path;
  display_name_ = display_name;
  if (path_changed) emit file_path_changed(file_path_);
  if (name_changed) emit display_name_changed(display_name_);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_model_document.cpp"
