"""secoverhead: measure what database security features cost in performance.

Layers, data flowing one way: servers -> workloads -> results -> stats -> report.
"""

__version__ = "0.1.0"
