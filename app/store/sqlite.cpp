#include "app/store/sqlite.h"

#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "app/store/safe_file.h"

namespace mixlab::store {

void throw_sqlite_error(sqlite3* db, int rc, const char* expr, const char* file, int line) {
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const char* path = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  if ((rc & 0xff) == SQLITE_CORRUPT && path != nullptr && *path != '\0') {
    // Found mid-query (opening for writing runs quick_check first): say what it means.
    throw StoreError(std::string(path) + " is corrupt (" + message +
                         "); restore it from a backup or move it away to start a new history",
                     rc & 0xff);
  }
  std::string what = "SQLite error";
  if (path != nullptr && *path != '\0') what += " on " + std::string(path);
  what += ": " + message + " in '" + expr + "' at " + file + ":" + std::to_string(line);
  throw StoreError(what, rc & 0xff);
}

Connection::Connection(const std::string& path, OpenMode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;  // one connection per thread
  switch (mode) {
    case OpenMode::read_write_create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case OpenMode::read_write:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case OpenMode::read_only:
      flags |= SQLITE_OPEN_READONLY;
      break;
    case OpenMode::immutable:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
      break;
  }
  std::string name = path;
  if (mode == OpenMode::immutable) {
    // file: URI with the path percent-encoded where it would be read as URI syntax.
    name = "file:";
    for (const char c : path) {
      if (c == '%' || c == '?' || c == '#') {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
        name += hex;
      } else {
        name += c;
      }
    }
    name += "?immutable=1";
  }
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    const int err = db_ != nullptr ? sqlite3_system_errno(db_) : 0;
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open run database " + path + ": " + message +
                         (err != 0 ? " (" + std::string(std::strerror(err)) + ")" : ""),
                     rc & 0xff);
  }
  sqlite3_extended_result_codes(db_, 1);
  protect_database(path_);  // no export may write over it (safe_file.h)
}

Connection::~Connection() {
  if (db_ == nullptr) return;
  // Statements are finalised by their owners first; a close that fails still releases memory
  // once they are.
  if (sqlite3_close_v2(db_) != SQLITE_OK) {
    std::fprintf(stderr, "mixlab: closing %s: %s\n", path_.c_str(), sqlite3_errmsg(db_));
  }
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

bool Connection::read_only() const {
  return sqlite3_db_readonly(db_, "main") == 1;
}

void Connection::exec(std::string_view sql) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    sqlite3_free(error);
    throw_sqlite_error(db_, rc, text.c_str(), __FILE__, __LINE__);
  }
}

Statement Connection::prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, std::string(sql).c_str(), __FILE__, __LINE__);
  return Statement(db_, stmt);
}

std::int64_t Connection::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}

int Connection::changes() const {
  return sqlite3_changes(db_);
}

std::int64_t Connection::query_int(std::string_view sql) {
  Statement stmt = prepare(sql);
  if (!stmt.step()) throw StoreError("no result from '" + std::string(sql) + "'");
  return stmt.column_int(0);
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  SQLITE_CHECK(db_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  SQLITE_CHECK(db_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  SQLITE_CHECK(db_, sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                        SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_null(int index) {
  SQLITE_CHECK(db_, sqlite3_bind_null(stmt_, index));
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string sql = sqlite3_sql(stmt_) != nullptr ? sqlite3_sql(stmt_) : "";
  sqlite3_reset(stmt_);
  throw_sqlite_error(db_, rc, sql.c_str(), __FILE__, __LINE__);
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Statement::column_int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  if (column_is_null(column)) return std::nan("");
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

Transaction::Transaction(Connection& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!open_) return;
  char* error = nullptr;
  if (sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, &error) != SQLITE_OK) {
    // After SQLITE_FULL or an I/O error SQLite may already have rolled back.
    if (sqlite3_get_autocommit(db_.get()) == 0)
      std::fprintf(stderr, "mixlab: rollback on %s failed: %s\n", db_.path().c_str(),
                   error != nullptr ? error : "?");
  }
  sqlite3_free(error);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace mixlab::store
