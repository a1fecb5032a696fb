// The run store's rows as records: which columns a run's row has and in what order, and reading
// a row into a RunRecord or a StepMetrics and binding figures back. Used by the store
// (run_store.cpp) and nowhere outside app/store.
#pragma once

#include <string>
#include <string_view>

#include "app/store/run_owner.h"
#include "app/store/run_record.h"
#include "app/store/run_store.h"
#include "app/store/sqlite.h"
#include "engine/train/run_fields.h"

namespace mixlab::store::rows {

// The runs table's columns: the record's own in the order read_run reads them, then each run
// setting's (engine/train/run_fields.h) in table order.
extern const std::string_view kRecordColumns;
// ", precision, loss_scaling, ...": the settings' columns, each prefixed with ", ".
const std::string& field_columns();

void bind_field(Statement& st, int index, const FieldValue& value);

// A row of "SELECT kRecordColumns field_columns() FROM runs". A setting that the field table
// (engine/train/run_fields.h) cannot read is listed in the record's `damage`, never thrown: one
// bad row must not hide the others. (The status has the schema's CHECK constraint.)
RunRecord read_run(const Statement& st);

// The columns of a run's recording process, and reading them from `first` on (a NULL
// heartbeat, a run of an older store, reads as 0: none known).
extern const std::string_view kOwnerColumns;
Owner read_owner(const Statement& st, int first);

// The summary figures: "steps_done = ?, ..." for an UPDATE, and binding them from `first`;
// returns the next parameter index.
extern const std::string_view kSummaryAssignments;
int bind_summary(Statement& st, int first, const RunSummary& s);

// A row of the steps table, columns step, epoch, wall_offset_s, ..., samples.
StepMetrics read_step(const Statement& st);

}  // namespace mixlab::store::rows
