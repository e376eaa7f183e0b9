{{/* Names, labels, the Secret's keys and the checks that refuse a combination that cannot
work (each one line naming the values to set). */}}

{{- define "flatavro.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flatavro.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "flatavro.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "flatavro.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: include with (list $ "service"). */}}
{{- define "flatavro.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "flatavro.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "flatavro.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "flatavro.sparkImage" -}}
{{- printf "%s:%s" .Values.sparkImage.repository (default .Chart.AppVersion .Values.sparkImage.tag) }}
{{- end }}

{{- define "flatavro.secretName" -}}
{{- if .Values.secret.create }}{{ include "flatavro.fullname" . }}{{ else }}{{ required "secret.create=false needs secret.existingSecret: the name of a Secret with the keys in secret.existingSecretKeys" .Values.secret.existingSecret }}{{ end }}
{{- end }}

{{/* The Secret's keys, by environment variable: those with a value when the chart makes
the Secret, else secret.existingSecretKeys. Rendered as a YAML map (key: "true"). */}}
{{- define "flatavro.secretKeys" -}}
{{- $s := .Values.secret }}
{{- $values := dict "FLATAVRO_API_KEYS" $s.apiKeys "FLATAVRO_REGISTRY_PASSWORD" $s.registryPassword "FLATAVRO_REGISTRY_BEARER_TOKEN" $s.registryBearerToken "FLATAVRO_KAFKA_SASL_PASSWORD" $s.kafkaSaslPassword "AWS_ACCESS_KEY_ID" $s.awsAccessKeyId "AWS_SECRET_ACCESS_KEY" $s.awsSecretAccessKey }}
{{- range $key, $value := $values }}
{{- if or (and $s.create $value) (and (not $s.create) (has $key $s.existingSecretKeys)) }}
{{ $key }}: "true"
{{- end }}
{{- end }}
{{- end }}

{{/* env entries for the Secret's keys among the given names: (list $ "KEY1" "KEY2"). */}}
{{- define "flatavro.secretEnv" -}}
{{- $root := index . 0 -}}
{{- $present := include "flatavro.secretKeys" $root | fromYaml -}}
{{- range $key := rest . }}
{{- if hasKey $present $key }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "flatavro.secretName" $root }}
      key: {{ $key }}
{{- end }}
{{- end }}
{{- end }}

{{/* The registry URL the bridge and the stream use: the external one, else the service's
embedded registry. */}}
{{- define "flatavro.registryUrl" -}}
{{- if .Values.registry.url }}{{ .Values.registry.url }}{{ else }}{{ printf "http://%s:%v/registry" (include "flatavro.fullname" .) .Values.service.port }}{{ end }}
{{- end }}

{{/* FLATAVRO_KAFKA_<NAME> entries of kafka.settings (security.protocol ->
FLATAVRO_KAFKA_SECURITY_PROTOCOL). */}}
{{- define "flatavro.kafkaEnv" -}}
{{- range $name, $value := .Values.kafka.settings }}
- name: {{ printf "FLATAVRO_KAFKA_%s" ($name | upper | replace "." "_") }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* The refusals: values that cannot work together, each one line naming what to set. */}}
{{- define "flatavro.validate" -}}
{{- if and (not .Values.secret.create) (not .Values.secret.existingSecret) }}
{{- fail "secret.create=false needs secret.existingSecret: the name of a Secret with the keys in secret.existingSecretKeys" }}
{{- end }}
{{- if and (not .Values.registry.url) (gt (int .Values.service.replicas) 1) }}
{{- fail (printf "service.replicas=%v needs an external registry: the embedded registry is one SQLite file on one volume (one replica); set registry.url to a Confluent-compatible registry, or service.replicas=1" .Values.service.replicas) }}
{{- end }}
{{- if and (not .Values.registry.url) (not .Values.service.enabled) (or .Values.bridge.enabled .Values.stream.enabled) }}
{{- fail "the bridge and the stream need a schema registry: set registry.url, or service.enabled=true (its embedded registry)" }}
{{- end }}
{{- if and .Values.bridge.enabled .Values.bridge.register (not .Values.registry.url) .Values.secret.create .Values.secret.apiKeys (not .Values.secret.registryBearerToken) }}
{{- fail "bridge.register=true writes schemas to the embedded registry, whose writes need one of secret.apiKeys: set secret.registryBearerToken to one of them" }}
{{- end }}
{{- if and .Values.bridge.enabled (not .Values.bridge.sourceTopic) }}
{{- fail "bridge.enabled=true needs bridge.sourceTopic: the TiCDC changefeed's topic" }}
{{- end }}
{{- if .Values.stream.enabled }}
{{- if not .Values.stream.topic }}
{{- fail "stream.enabled=true needs stream.topic: the flat-avro topic to apply" }}
{{- end }}
{{- range $name := list "tablePath" "checkpoint" }}
{{- $path := index $.Values.stream $name }}
{{- if not (hasPrefix "s3a://" $path) }}
{{- fail (printf "stream.%s=%q: the stream's table and checkpoint live on object storage (a pod's disk dies with it); set an s3a://bucket/path" $name $path) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The image's user (deploy/docker/Dockerfile: uid and gid 10001); fsGroup lets it write
the embedded registry's volume. */}}
{{- define "flatavro.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
{{- end }}
