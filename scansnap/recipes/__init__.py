"""The book's figure recipes, one module per chapter (``chNN_<topic>.py``).

Each module defines ``RECIPES``, a list of :class:`scansnap.experiments.Recipe`; a new module here
is picked up by :data:`scansnap.experiments.RECIPES` without further registration.
"""
