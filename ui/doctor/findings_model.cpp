#include "ui/doctor/findings_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <array>

#include "engine/doctor/doctor_text.h"
#include "ui/qt_text.h"

namespace mixlab::ui {
namespace {

struct ColumnText {
  const char* title;
  const char* tooltip;
};
// In Column order.
constexpr std::array<ColumnText, FindingsModel::Count> kColumnTexts = {{
    {QT_TR_NOOP("Severity"), QT_TR_NOOP("How much of the step the finding explains")},
    {QT_TR_NOOP("Finding"), QT_TR_NOOP("The rule that found it")},
    {QT_TR_NOOP("Layers"), QT_TR_NOOP("The layers it names, counted from 0 as in the Model tab; "
                                      "click a finding to select its first layer there")},
    {QT_TR_NOOP("Message"), QT_TR_NOOP("What the cost model found, with its figures")},
    {QT_TR_NOOP("Fix"), QT_TR_NOOP("The change to make")},
    {QT_TR_NOOP("Predicted gain"),
     QT_TR_NOOP("The speed-up per sample the cost model predicts for the fix")},
}};

// Dark red and dark orange: readable in light and dark palettes alike.
const QColor kHighText(170, 0, 0);
const QColor kMediumText(176, 96, 0);

}  // namespace

QString layers_text(const std::vector<int>& layers) {
  QStringList parts;
  for (const int l : layers) parts << QString::number(l);
  return parts.join(QStringLiteral(", "));
}

FindingsModel::FindingsModel(QObject* parent) : QAbstractTableModel(parent) {}

void FindingsModel::set_findings(std::vector<doctor::Finding> findings) {
  beginResetModel();
  findings_ = std::move(findings);
  endResetModel();
}

int FindingsModel::row_of(const QString& id) const {
  for (std::size_t i = 0; i < findings_.size(); ++i) {
    if (qt_text(findings_[i].id) == id) return static_cast<int>(i);
  }
  return -1;
}

QMap<int, QStringList> FindingsModel::findings_by_layer() const {
  QMap<int, QStringList> by_layer;
  for (const doctor::Finding& f : findings_) {
    const QString line = QStringLiteral("[%1] %2: %3")
                             .arg(qt_text(to_string(f.severity)), qt_text(f.id),
                                  qt_text(f.message));
    for (const int layer : f.layers) {
      if (!by_layer[layer].contains(line)) by_layer[layer] << line;
    }
  }
  return by_layer;
}

int FindingsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(findings_.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const doctor::Finding& f = findings_[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return display(f, column);
    case Qt::ToolTipRole:
      return tooltip(f, column);
    case Qt::ForegroundRole:
      if (column != Severity) return {};
      if (f.severity == doctor::Severity::high) return QBrush(kHighText);
      if (f.severity == doctor::Severity::medium) return QBrush(kMediumText);
      return {};
    case Qt::FontRole:
      if (column == Severity && f.severity >= doctor::Severity::medium) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    case Qt::TextAlignmentRole:
      if (column == PredictedGain) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    default:
      break;
  }
  switch (static_cast<Role>(role)) {
    case Role::Layers:
      return QVariant::fromValue(QList<int>(f.layers.begin(), f.layers.end()));
    case Role::Severity:
      return static_cast<int>(f.severity);
    case Role::Id:
      return qt_text(f.id);
    case Role::PredictedGain:
      return f.predicted_gain;
  }
  return {};
}

QVariant FindingsModel::display(const doctor::Finding& f, int column) const {
  switch (column) {
    case Severity:
      return qt_text(to_string(f.severity));
    case Finding:
      return qt_text(f.id);
    case Layers:
      return layers_text(f.layers);
    case Message:
      return qt_text(f.message);
    case Fix:
      return qt_text(f.suggestion);
    case PredictedGain:
      return f.predicted_gain > 0 ? qt_text(doctor::ratio(f.predicted_gain)) : QStringLiteral("—");
    default:
      return {};
  }
}

QVariant FindingsModel::tooltip(const doctor::Finding& f, int column) const {
  switch (column) {
    case Message:
    case Fix: {
      // The whole text (the column cuts it), and the figures behind it.
      QString text = qt_text(column == Message ? f.message : f.suggestion);
      if (column == Message && !f.figures.empty()) {
        QStringList figures;
        for (const auto& [name, value] : f.figures)
          figures << QStringLiteral("%1 = %2").arg(qt_text(name)).arg(value, 0, 'g', 6);
        text += QStringLiteral("\n\n") + figures.join(QLatin1Char('\n'));
      }
      if (column == Fix && f.change)
        text += tr("\n(the change: %1)").arg(QString::fromStdString(doctor::describe(f.change)));
      return text;
    }
    case Layers:
      return f.layers.empty() ? tr("The whole step, no layer in particular")
                              : tr("Click to select layer %1 in the Model tab").arg(f.layers.front());
    default:
      return {};
  }
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= Count) return {};
  const ColumnText& text = kColumnTexts[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return tr(text.title);
  if (role == Qt::ToolTipRole) return tr(text.tooltip);
  return {};
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_findings_model.cpp"
