"""Views of the library's objects for notebooks: plotly pictures of graphs, Netron embedding.

Nothing in the library imports this package; plotly, netron and IPython are imported when a view is made.
"""
from .graph_view import KIND_COLORS, VIEW_KINDS, layer_layout, op_kind, plot_graph, view_kind
from .netron_view import NetronServer, show_netron, stop_all

__all__ = ["KIND_COLORS", "VIEW_KINDS", "NetronServer", "layer_layout", "op_kind", "plot_graph", "show_netron", "stop_all",
           "view_kind"]
