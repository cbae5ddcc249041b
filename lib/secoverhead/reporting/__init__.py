"""Tables, plots and rendered reports of one study's results."""
