"""Where did it learn this? The training pairs whose encoder or decoder states are nearest to a translation's."""
