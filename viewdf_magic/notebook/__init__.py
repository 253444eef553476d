"""IPython integration: the %%viewdf magics and how results are shown."""
