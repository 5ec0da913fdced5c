"""infopt: the shared library of the DL inference optimization course.

Subpackages mirror the course: ``ir`` (unit 01), ``passes`` (02), ``codegen`` (03, 06),
``accel`` (07), ``llm`` (08), ``runtime`` (09, 13), ``kernels`` (10), ``quant`` (12),
``widgets`` (views of all of them), ``grading`` (helpers the test cells call).
Importing ``infopt`` is cheap: heavy tools are imported where they are used.
"""

__version__ = "0.1.0"
