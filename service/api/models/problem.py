"""`Problem`: the RFC 9457 problem+json body every error answers, as the OpenAPI document
describes it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["Problem"]

class Problem(BaseModel):
    """RFC 9457 problem details; `code` is stable, the optional members depend on the error
    (each status's examples show them)."""

    type: str = Field(examples=["urn:flatavro:problem:subject_not_found"])
    title: str = Field(examples=["Subject not found"])
    status: int = Field(ge=400, le=599, examples=[404])
    detail: str = Field(description="What is at fault, and the hint when there is one")
    instance: str = Field(description="The request path", examples=["/v1/subjects/x-value"])
    code: str = Field(examples=["subject_not_found"])
    message: str | None = Field(None, description="`detail` without the hint")
    hint: str | None = Field(None, description="What to change in the request to get past "
                                               "the error")
    fix: list[str] | None = Field(None, description="The settings `hint` names")
    errors: list[dict[str, Any]] | None = Field(
        None, description="Every problem of a batch or of a request's fields, each with its "
                          "location (index, field, column, byte offset) and message")
    registry_error_code: int | None = Field(None, description="Confluent's `error_code`")
    field: str | None = None
    column: str | int | None = Field(None, description="A table column, or the column of "
                                                     "a JSON syntax error (1-based)")
    position: int | None = Field(None, description="The character of a JSON or DDL error")
    line: int | None = None
    byte_offset: int | None = Field(None, description="The first byte that is not UTF-8")
    accepted: list[str] | None = Field(None, description="415: the accepted media types")
    allow: str | None = Field(None, description="405: the allowed methods (also `Allow`)")
    limit: int | None = Field(None, description="The limit a request went over")
    retry_after: int | None = Field(None, description="503: seconds until it may work again")
    dependencies: dict[str, Any] | None = Field(
        None, description="503 from /readyz: each dependency's status and reason")
    subject: str | None = None
    version: int | str | None = None
    topic: str | None = None
    table: str | None = None
    mysql_type: str | None = Field(None, description="The MySQL type at fault")
    avro_name: str | None = Field(None, description="The Avro name two columns both become")
    other: str | None = Field(None, description="The other column of a name collision")
    rule: str | None = Field(None, description="The topic rule at fault")
    what: str | None = Field(None, description="Which limit (`columns`, `indexes`, ...)")
    value: int | None = Field(None, description="The value past `limit`")
    content_type: str | None = Field(None, description="415: the media type that was sent")
    converted: int | None = Field(None, description="Messages converted (0: a batch converts "
                                                    "whole or not at all)")
    failed_messages: list[int] | None = Field(None, description="Indexes of the messages "
                                                                "that cannot be converted")
    registry_status: int | None = Field(None, description="The HTTP status the registry "
                                                          "answered")
    error_code: int | None = Field(None, description="The `error_code` the registry answered")
    operation: str | None = Field(None, description="registry_unsupported: the Confluent API "
                                                    "call the registry does not implement")
    url: str | None = Field(None, description="The registry that does not answer")
    reason: str | None = Field(None, description="Why it does not answer")
    subjects: list[dict[str, Any]] | None = Field(
        None, description="409: each refusing subject with every incompatibility")
    registered_table: str | None = Field(None, description="409: the table the topic holds")
    location: str | None = Field(None, description="A claim-check message's object location")
    bucket: str | None = Field(None, description="The S3 bucket of a claim-check object")
    key: str | None = Field(None, description="The S3 key of a claim-check object")
    identifiers: list[dict[str, Any]] | None = Field(
        None, description="Every identifier past TiDB's length limit")
