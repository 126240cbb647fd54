# SPDX-License-Identifier: MIT
"""pg.py - a throwaway PostgreSQL 15 for the ground tests
(/work/shared/recipes/ground-and-targets.md section 1): initdb as the
postgres user into /tmp/pgt.XXXXXX, a unix socket in that directory only,
stopped by its pid (and killed with the test: PR_SET_PDEATHSIG)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from railmon_test import die_with_us

PGBIN = "/usr/lib/postgresql/15/bin"


def _as_postgres():
    die_with_us()


class Postgres:
    def __init__(self, db="railmon_test"):
        # short: the socket path must stay under 107 bytes
        self.dir = tempfile.mkdtemp(prefix="pgt.", dir="/tmp")
        shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o755)
        self.db = db
        self.proc = None
        subprocess.run(["runuser", "-u", "postgres", "--", PGBIN + "/initdb", "-D", self.dir + "/data", "-A",
                        "trust", "-U", "railmon", "-E", "UTF8", "--no-locale", "--no-sync"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.start()
        self.psql("CREATE DATABASE %s" % db, db="postgres")
        self.url = "postgresql:///%s?host=%s&user=railmon" % (db, self.dir)

    def start(self):
        self.log = open(self.dir + "/server.log", "a")
        self.proc = subprocess.Popen(["runuser", "-u", "postgres", "--", PGBIN + "/postgres", "-D",
                                      self.dir + "/data", "-c", "listen_addresses=", "-k", self.dir,
                                      "-c", "fsync=off"], stdout=self.log, stderr=self.log,
                                     preexec_fn=_as_postgres)
        deadline = time.monotonic() + 30
        while subprocess.run(["pg_isready", "-q", "-h", self.dir]).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("postgres did not start: " + open(self.dir + "/server.log").read()[-2000:])
            time.sleep(0.05)

    def pid(self):
        with open(self.dir + "/data/postmaster.pid") as f:
            return int(f.readline())

    def stop(self):
        """Fast shutdown by the server's pid; waits for it."""
        if self.proc and self.proc.poll() is None:
            try:
                os.kill(self.pid(), signal.SIGINT)
            except (OSError, ValueError):
                self.proc.kill()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def fini(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def psql(self, sql, db=None, timeout=120):
        r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-U",
                            "railmon", "-d", db or self.db, "-c", sql], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("psql %r: %s" % (sql, r.stderr))
        return r.stdout.strip()

    def schema_at(self, src, version, after=None, db=None):
        """The schema as `railmon db migrate` leaves it at version: the
        migrations 1..version of src/ground/migrations applied in order and
        recorded in schema_migrations, as a database made by an older
        railmon has them (the upgrade tests and benchmarks: an old
        database, then `railmon db migrate`).  after: the file name the
        caller expects as the next migration (version + 1), checked so a
        renumbered migration fails here, not in a confusing later step.
        Returns every migration's file name, in order."""
        mig = os.path.join(src, "ground", "migrations")
        names = sorted(f for f in os.listdir(mig) if f.endswith(".sql"))
        if after is not None and names[version:version + 1] != [after]:
            raise AssertionError("migration %d is %r, not %r" % (version + 1, names[version:version + 1], after))
        self.psql("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                  "applied_at timestamptz NOT NULL DEFAULT now())", db=db)
        for v, name in enumerate(names[:version], 1):
            with open(os.path.join(mig, name)) as f:
                self.psql(f.read(), db=db)
            self.psql("INSERT INTO schema_migrations VALUES (%d, '%s')" % (v, name[5:-4]), db=db)
        return names

    def rows(self, sql, db=None, timeout=120):
        out = self.psql(sql, db, timeout)
        return [line.split("|") for line in out.splitlines()] if out else []
