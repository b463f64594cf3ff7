"""lablib: what the lab's host-side analysers share.

The result-folder format (meta.json, raw CSV files, summary key names),
summary statistics and fits, the command-line conventions and the plot
style.  Importing the package is cheap: matplotlib is loaded only when a
plot is drawn.
"""
