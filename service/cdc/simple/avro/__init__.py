"""The Simple protocol's Avro encoding (``encoding-format=avro``) read into the document its
JSON encoding would be, so both encodings take one path through the decoder.

TiCDC writes a Simple-Avro message value as a bare Avro datum (no magic byte, no registry id,
no container; the key is empty) of the schema in ``service/cdc/simple/message.avsc``: a
verbatim copy of pingcap/tiflow ``pkg/sink/codec/simple/message.json`` at tag v8.3.0
(Apache-2.0; the same blob from v8.1.0 through v8.5.x and master). That schema is a top-level
union of named records and every message is its ``Message`` branch (index 11), so a value
starts with the byte ``0x16`` (zig-zag varint 11) where a Simple-JSON value starts with ``{``:
`is_avro` tells them apart, message by message; `avro_document` reads one
(`service.cdc.simple.avro.document`), and explains a value that is not a datum of the schema
(`service.cdc.simple.avro.diagnosis`).
"""

from service.cdc.simple.avro.document import avro_document, is_avro
from service.cdc.simple.avro.schema import MESSAGE_BRANCH, SCHEMA_FILE

__all__ = ["MESSAGE_BRANCH", "SCHEMA_FILE", "avro_document", "is_avro"]
