"""What stands in for a host: Inspector's own captures (made and opened) and sosreports,
read through a HostRoot. Above discover/: a sosreport's tool outputs are parsed with its parsers."""
