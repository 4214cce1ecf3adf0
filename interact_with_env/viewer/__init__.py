"""The run viewer: a page that shows a run folder (served on 127.0.0.1, or exported as one file).

``run_folder`` reads the folder and lists what it could not read, ``episodes`` turns a
trajectory into a list row and a transcript, ``page_data`` splits the data into an index and
lazily read parts, ``page`` writes the HTML, ``server`` serves it. The page itself (``static/``)
is our own HTML, CSS and JavaScript, with charts drawn as SVG.
"""
