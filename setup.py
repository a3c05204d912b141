"""Only the build step pyproject.toml cannot express: the migrations, written in
the top-level `migrations/`, are copied into the package (agent_platform/migrations)
so that an installed wheel can create and upgrade its database."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithMigrations(build_py):
    def run(self):
        # build_py copies into build/lib and never deletes there: a module or
        # migration removed from the source would stay and ship in the wheel
        # (a stale migration would even be applied). Build the package afresh.
        shutil.rmtree(Path(self.build_lib) / "agent_platform", ignore_errors=True)
        super().run()
        # SQLite's set in migrations/, PostgreSQL's in migrations/postgresql/.
        source = Path(__file__).resolve().parent / "migrations"
        for folder in (source, source / "postgresql"):
            target = Path(self.build_lib) / "agent_platform" / folder.relative_to(source.parent)
            self.mkpath(str(target))
            for path in sorted(folder.glob("*.sql")):
                self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildWithMigrations})
