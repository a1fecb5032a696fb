// A small RAII layer over SQLite's C API: a connection, prepared statements, transactions.
// Every failing call throws StoreError with SQLite's message, the expression, file and line
// (SQLITE_CHECK), never exits; destructors log instead of throwing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mixlab::store {

// Anything the run store could not do: open, read, write. `code()` is SQLite's primary result
// code (SQLITE_FULL, SQLITE_BUSY, ...) or 0 when the error is MixLab's own (wrong file, newer
// schema).
class StoreError : public Error {
 public:
  StoreError(const std::string& what, int code = 0) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, const char* expr, const char* file,
                                     int line);

// Runs an sqlite3_* call that returns a result code; throws StoreError unless it is SQLITE_OK.
#define SQLITE_CHECK(db, expr)                                                                 \
  do {                                                                                         \
    const int mixlab_sqlite_rc_ = (expr);                                                      \
    if (mixlab_sqlite_rc_ != 0)                                                                \
      ::mixlab::store::throw_sqlite_error((db), mixlab_sqlite_rc_, #expr, __FILE__, __LINE__); \
  } while (0)

// immutable: read-only, and SQLite neither locks the file nor creates -wal/-shm beside it: for a
// database on read-only media or in a folder this process cannot write.
enum class OpenMode { read_write_create, read_write, read_only, immutable };

class Statement;

class Connection {
 public:
  Connection() = default;
  // Opens (and with read_write_create, creates) the file. Throws StoreError naming the path.
  // The file is then protected from being written over by an export (protect_database).
  Connection(const std::string& path, OpenMode mode);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }
  bool read_only() const;

  // Runs one or more statements without results.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql) const;
  std::int64_t last_insert_id() const;
  int changes() const;
  // One integer from a query that returns one row ("PRAGMA user_version").
  std::int64_t query_int(std::string_view sql);

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement. bind() takes 1-based parameter indices; column getters 0-based.
// NaN binds as NULL (SQLite stores no NaN) and a NULL reads back as NaN through column_double.
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind_null(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Steps once: true while a row is available, false when done.
  bool step();
  // Steps a statement that returns no rows, then resets it for the next use.
  void run();
  void reset();

  bool column_is_null(int column) const;
  std::int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() ran. IMMEDIATE takes the write lock
// up front, so a second writer waits in the busy handler instead of failing mid-transaction.
class Transaction {
 public:
  explicit Transaction(Connection& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& db_;
  bool open_ = true;
};

}  // namespace mixlab::store
