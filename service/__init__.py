"""flatavro: TiCDC-identical flat-avro schemas, registry checks and codecs for TiDB pipelines."""
