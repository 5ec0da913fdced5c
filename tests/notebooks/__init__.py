"""The notebook test harness: build submissions from a unit's sources, autograde them in one nbgrader run."""
