"""TiCDC's other protocols (Canal-JSON, Open Protocol, Simple) decoded into `ChangeEvent`s."""
