// The settings in which runs differ: what the comparison shows beside the figures, so that a
// speed ratio is read against what changed (precision, batch size, device...).
#pragma once

#include <QString>
#include <QStringList>
#include <span>
#include <vector>

#include "app/store/run_record.h"

namespace mixlab::ui {

struct SettingDifference {
  QString name;        // "precision", "batch size": a run setting's label
  QStringList values;  // one per run, in the runs' order
};

// The settings whose values are not the same in every run, in a fixed order: the model, every
// field of the run-settings table (engine/train/run_fields.h) under its label, then the
// environment. Empty when all are equal (or there are fewer than two runs).
std::vector<SettingDifference> differing_settings(std::span<const store::RunRecord> runs);

}  // namespace mixlab::ui
