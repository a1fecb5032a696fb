// The run panel's run settings, one per field of the run-settings table
// (engine/train/run_fields.h), in the table's text form. A field the panel shows is bound to its
// widgets (their value as text, and back); a field it does not show is carried as text, so that
// it is remembered and reaches the run all the same. Saved to and restored from QSettings under
// settings::run_setting_key(): a new field of the table is remembered with no code here.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <functional>
#include <map>
#include <string_view>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace mixlab {
struct RunField;
}

namespace mixlab::ui {

class FieldBindings {
 public:
  struct Binding {
    QList<QObject*> widgets;  // their signals are blocked while a value is shown
    std::function<QString()> text;
    std::function<bool(const QString&)> show;  // false: not a value the widgets take
    QString initial;  // shown while nothing is remembered; empty: what the rest implies
  };

  // One widget's value as a field's text: integers, numbers as the table writes them,
  // "true" / "false", a combo box's entry.
  static Binding spin_box(QSpinBox* spin);
  static Binding spin_box(QDoubleSpinBox* spin);
  static Binding check_box(QCheckBox* box);
  static Binding combo_box(QComboBox* combo);

  FieldBindings();  // every field carried, at RunConfig's default

  void bind(std::string_view field, Binding binding);
  QString text(const RunField& field) const;
  // Shows `text` as the field's value without the widgets' signals. False, changing nothing,
  // when the field (or its widgets) does not take it.
  bool show(const RunField& field, const QString& text);

  // From the settings. A field without a readable value shows its binding's initial text, else
  // the value the remembered fields imply, read through the table in its order (SGD's learning
  // rate after "sgd").
  void load();
  void save() const;

 private:
  std::map<std::string_view, Binding> bound_;
  std::map<std::string_view, QString> carried_;
};

}  // namespace mixlab::ui
