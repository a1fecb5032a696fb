#!/usr/bin/env python3
"""Helpers for tests/faults/*.sh: read a MixLab run store and mixlab-cli's JSON without the CLI.

  store_check.py integrity DB          'ok', or SQLite's complaints; exit 1 when not ok (read-only)
  store_check.py runs DB               one 'id status' line per run (read-only)
  store_check.py appid DB              PRAGMA application_id
  store_check.py json FILE KEY...      the value of each top-level KEY of a JSON object (or '')
  store_check.py list FILE             'id status' lines from `runs list --json` output
  store_check.py csv FILE COLUMN...    the first data row's COLUMN values, one per line (repr)
  store_check.py escapes DB ID         puts ESC / BEL sequences into run ID's name, model name,
                                       message, note and a tag, as an older MixLab or another
                                       tool could have stored them
  store_check.py formulas FILE COLUMN...
      every cell of COLUMN (all rows) that a spreadsheet would run as a formula (it starts with
      = + - @ tab or CR, OWASP's list), one per line; exit 1 when there is any, 2 when the file
      or a column is missing
  store_check.py writers DB BEFORE OUT...
      after concurrent `train --json` runs whose outputs are OUT...: prints one line per problem
      (a run not finished or without an id, an id twice, the file empty, not MixLab's, not
      intact, a row count other than BEFORE + the runs, a printed run missing or not finished);
      exit 1 when there is any
"""
import csv
import json
import os
import sqlite3
import sys

MIXLAB_APPLICATION_ID = 0x4D584C42  # app/store/run_store.h


def check_writers(db_path, before, outputs):
    problems, ids = [], []
    for out in outputs:
        try:
            with open(out, encoding="utf-8", errors="replace") as f:
                result = json.load(f)
        except (OSError, ValueError):
            problems.append("%s: no JSON result" % os.path.basename(out))
            continue
        run_id = result.get("run_id")
        if result.get("status") != "finished" or not isinstance(run_id, int):
            problems.append("%s: status %r, run_id %r" %
                            (os.path.basename(out), result.get("status"), run_id))
            continue
        ids.append(run_id)
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        problems.append("run ids printed by two processes: %s" % twice)
    size = os.path.getsize(db_path) if os.path.exists(db_path) else -1
    if size <= 0:
        problems.append("the database is %s" % ("missing" if size < 0 else "0 bytes"))
        return problems
    try:
        db = sqlite3.connect("file:" + db_path + "?mode=ro", uri=True, timeout=10)
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if app_id != MIXLAB_APPLICATION_ID:
            problems.append("application_id %#x is not MixLab's" % app_id)
        integrity = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            problems.append("integrity_check: %s" % "; ".join(integrity)[:200])
        rows = dict(db.execute("SELECT id, status FROM runs"))
        db.close()
    except sqlite3.Error as e:
        problems.append("cannot read the store: %s" % e)
        return problems
    if len(rows) != before + len(outputs):
        problems.append("%d runs in the store, expected %d (%d before + %d)" %
                        (len(rows), before + len(outputs), before, len(outputs)))
    missing = [i for i in ids if i not in rows]
    if missing:
        problems.append("printed run ids not in the store: %s" % missing)
    unfinished = ["%d:%s" % (i, rows[i]) for i in ids if i in rows and rows[i] != "finished"]
    if unfinished:
        problems.append("runs not finished in the store: %s" % unfinished)
    return problems


def connect_ro(path):
    return sqlite3.connect("file:" + path + "?mode=ro", uri=True, timeout=10)


def main(argv):
    cmd, rest = argv[1], argv[2:]
    if cmd == "integrity":
        try:
            # Read-only: a -wal left by a killed writer is read, not checkpointed; the next
            # MixLab open is the one that recovers it.
            db = connect_ro(rest[0])
            rows = [r[0] for r in db.execute("PRAGMA integrity_check")]
            db.close()
        except sqlite3.Error as e:
            print("error: %s" % e)
            return 1
        print("; ".join(rows)[:300])
        return 0 if rows == ["ok"] else 1
    if cmd == "runs":
        try:
            db = connect_ro(rest[0])
            for run_id, status in db.execute("SELECT id, status FROM runs ORDER BY id"):
                print(run_id, status)
            db.close()
        except sqlite3.Error as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        return 0
    if cmd == "appid":
        try:
            db = connect_ro(rest[0])
            print(db.execute("PRAGMA application_id").fetchone()[0])
            db.close()
        except sqlite3.Error as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        return 0
    if cmd == "json":
        try:
            with open(rest[0], encoding="utf-8", errors="replace") as f:
                obj = json.load(f)
        except (OSError, ValueError):
            return 1
        for key in rest[1:]:
            value = obj.get(key) if isinstance(obj, dict) else None
            print("" if value is None else value)
        return 0
    if cmd == "list":
        try:
            with open(rest[0], encoding="utf-8", errors="replace") as f:
                runs = json.load(f)
        except (OSError, ValueError):
            return 1
        for r in runs:
            print(r.get("id"), r.get("status"))
        return 0
    if cmd == "csv":
        try:
            with open(rest[0], newline="", encoding="utf-8", errors="replace") as f:
                rows = list(csv.DictReader(f))
        except (OSError, ValueError, csv.Error):
            return 1
        if not rows:
            return 1
        for column in rest[1:]:
            print(repr(rows[0].get(column)))
        return 0
    if cmd == "escapes":
        evil = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"
        db = sqlite3.connect(rest[0], timeout=10)
        with db:
            db.execute("UPDATE runs SET name = ?, model_name = ?, message = ?, note = ? "
                       "WHERE id = ?", ("name" + evil, "model" + evil, "message" + evil,
                                        "note" + evil, int(rest[1])))
            db.execute("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)",
                       (int(rest[1]), "tag" + evil))
        db.close()
        return 0
    if cmd == "formulas":
        try:
            with open(rest[0], newline="", encoding="utf-8", errors="replace") as f:
                rows = list(csv.DictReader(f))
        except (OSError, ValueError, csv.Error) as e:
            print("cannot read %s: %s" % (rest[0], e))
            return 2
        if not rows or any(c not in rows[0] for c in rest[1:]):
            print("no rows, or a column missing (%s)" % ", ".join(rest[1:]))
            return 2
        live = ["%s=%r" % (c, row[c]) for row in rows for c in rest[1:]
                if row[c][:1] in ("=", "+", "-", "@", "\t", "\r")]
        for cell in live:
            print(cell)
        return 1 if live else 0
    if cmd == "writers":
        problems = check_writers(rest[0], int(rest[1]), rest[2:])
        for p in problems:
            print(p)
        return 1 if problems else 0
    print("unknown command " + cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
