"""Only the build step pyproject.toml cannot express: the migrations, written in
the top-level `migrations/`, are copied into the package (agent_platform/migrations)
so that an installed wheel can create and upgrade its database."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithMigrations(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "agent_platform" / "migrations"
        self.mkpath(str(target))
        for path in sorted(Path(__file__).resolve().parent.joinpath("migrations").glob("*.sql")):
            self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildWithMigrations})
