"""The application: the papermill pipeline, the CLI and the Jupyter kernel launcher."""
