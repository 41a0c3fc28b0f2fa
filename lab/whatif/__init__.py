"""What if? Interventions on the real model (model/intervention.py): force, edit the source, switch heads off, attribute."""
