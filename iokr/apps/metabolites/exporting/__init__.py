"""What identify writes: the output schema, the table writers and the HTML report page."""
