"""What if? Interventions on the real model: force the English, change the Spanish, switch heads off, attribute a
token to its inputs, sample, and the coverage hint. Each is computed by the model itself (model/intervention.py)."""
