// The run database's schema as a list of forward migrations: migration N takes a database at
// user_version N-1 to N. A new MixLab that changes the schema appends a migration; it never
// edits an old one.
#pragma once

#include <span>
#include <string_view>

#include "app/store/sqlite.h"

namespace mixlab::store {

struct Migration {
  int version;           // the user_version after it ran
  std::string_view sql;  // one or more statements
};

// MixLab's migrations, version 1 to kSchemaVersion.
std::span<const Migration> schema_migrations();

// Applies the migrations in `steps` above the database's user_version, up to `target`, in one
// transaction that also sets user_version and application_id; a failing migration leaves the
// database as it was. Throws StoreError.
void migrate(Connection& db, std::span<const Migration> steps, int target);

}  // namespace mixlab::store
