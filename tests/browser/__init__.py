"""Drive the course in JupyterLab in headless Chromium, as a student would (issue: browser end-to-end)."""
