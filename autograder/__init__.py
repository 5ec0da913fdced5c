"""The instructor's tools: build the student release (release), drive nbgrader in temp course roots (nbgrader_course)."""
