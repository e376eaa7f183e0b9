"""`flatavro bridge`: a consumer-group service turning a TiCDC topic into flat-avro topics."""
