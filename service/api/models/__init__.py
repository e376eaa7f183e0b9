"""Request and response models of the v1 API (documentation and validation of small bodies).

Each converts at the edge: request models give the use-cases' plain types (`to_source`,
`to_input`), response models are built from them (`Out.of(...)`). This facade lists every
model, so the OpenAPI code finds one by its component name.
"""

from service.api.models.codec import (
    AvroJson,
    DecodedMessage,
    DecodeMessage,
    DecodeRequest,
    DecodeResponse,
    EncodedMessage,
    EncodeRecord,
    EncodeRequest,
    EncodeResponse,
    RegisteredSchemaOut,
    TopicSchemasOut,
    schema_json,
)
from service.api.models.convert import CONVERT_EXAMPLES, ConvertRequest, ConvertResponse
from service.api.models.levels_and_modes import (
    CompatibilityIn,
    CompatibilityOut,
    CompatibilityRemovedOut,
    ModeIn,
    ModeOut,
    ModeRemovedOut,
)
from service.api.models.problem import Problem
from service.api.models.registry_admin import (
    DeletedOut,
    DiffVerdictOut,
    FieldChangeOut,
    LevelSettingOut,
    ModeSettingOut,
    SchemaByIdOut,
    SchemaUseOut,
    SubjectOut,
    TopicDeletedOut,
    VersionDiffOut,
    VersionRefOut,
)
from service.api.models.tables import (
    DDL_EXAMPLE,
    IncompatibilityOut,
    OptionsModel,
    RegisteredOut,
    SchemasOut,
    SubjectVerdictOut,
    TableCheckOut,
    TableInput,
    TableRegistrationOut,
    TopicTableInput,
)

__all__ = ["AvroJson", "schema_json", "DecodedMessage", "DecodeMessage", "DecodeRequest",
           "DecodeResponse", "EncodedMessage", "EncodeRecord", "EncodeRequest", "EncodeResponse",
           "RegisteredSchemaOut", "TopicSchemasOut", "CONVERT_EXAMPLES", "ConvertRequest",
           "ConvertResponse", "CompatibilityIn", "CompatibilityOut", "CompatibilityRemovedOut",
           "ModeIn", "ModeOut", "ModeRemovedOut", "Problem", "DeletedOut", "DiffVerdictOut",
           "FieldChangeOut", "LevelSettingOut", "ModeSettingOut", "SchemaByIdOut",
           "SchemaUseOut", "SubjectOut", "TopicDeletedOut", "VersionDiffOut", "VersionRefOut",
           "DDL_EXAMPLE", "IncompatibilityOut", "OptionsModel", "RegisteredOut", "SchemasOut",
           "SubjectVerdictOut", "TableCheckOut", "TableInput", "TableRegistrationOut",
           "TopicTableInput"]
