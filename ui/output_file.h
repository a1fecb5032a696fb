// Files the GUI writes through Qt (QSaveFile: images of charts and of the model; model files)
// pass the same guard as every export (store::check_output_target): never over a run database
// or one of its -wal, -shm or -journal files.
#pragma once

#include <QString>

namespace mixlab::ui {

// Empty when `path` may be written; else why not, naming the file and the database.
QString output_refusal(const QString& path);

}  // namespace mixlab::ui
