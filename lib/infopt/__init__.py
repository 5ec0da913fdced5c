"""infopt: the shared library of the DL inference optimization course.

Subpackages mirror the course: ``ir`` (unit 01), ``passes`` (02), ``codegen`` (03), ``mlir`` (04),
``schedule`` (06, 11), ``accel`` (07), ``quant`` (12), ``runtime`` (the one run protocol and measurement: 02, 05,
09, 13), ``models`` and ``data`` (what the units run), ``widgets`` (views of all of them), ``grading`` (helpers the
test cells call). Units to come get their own package: ``pipelines`` (05), ``llm`` (08), ``profile`` (09),
``kernels`` (10), ``tinygrad`` (14).
Importing ``infopt`` is cheap: heavy tools are imported where they are used.
"""

__version__ = "0.1.0"
