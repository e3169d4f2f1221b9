{{/*
Names and labels shared by every template.
*/}}

{{- define "policy-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release name, plus the chart name unless the release name has it.
Truncated to 63 characters (DNS label limit of some name fields).
*/}}
{{- define "policy-scheduler.fullname" -}}
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

{{- define "policy-scheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "policy-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "policy-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "policy-scheduler.labels" -}}
helm.sh/chart: {{ include "policy-scheduler.chart" . }}
{{ include "policy-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "policy-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "policy-scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" when leader election is on: as set, or (null) when more than one replica runs.
*/}}
{{- define "policy-scheduler.leaderElect" -}}
{{- if kindIs "invalid" .Values.leaderElection.enabled }}
{{- gt (int .Values.replicaCount) 1 }}
{{- else }}
{{- .Values.leaderElection.enabled }}
{{- end }}
{{- end }}

{{- define "policy-scheduler.leaseName" -}}
{{- default (include "policy-scheduler.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "policy-scheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
What the values schema cannot say, refused with a message that says why:
- a shutdown timeout the kubelet would cut short: after SIGTERM the operator stops within
  shutdownTimeout, then Kopf stops its watchers; a SIGKILL before that abandons bindings
  in flight and skips releasing the leader Lease;
- a loopback bindAddress: the kubelet's probes (and Prometheus) connect to the pod's IP;
- schedulerName "default-scheduler" without allowDefaultScheduler: the operator would
  refuse to start (kube-scheduler's own name is served only when allowed), and a
  defaultPolicy serving it would be refused (Accepted=False, DefaultSchedulerNotAllowed).
*/}}
{{- define "policy-scheduler.checkValues" -}}
{{- if ge (float64 .Values.shutdownTimeout) (float64 .Values.terminationGracePeriodSeconds) }}
{{- fail (printf "shutdownTimeout (%v s) must be below terminationGracePeriodSeconds (%v s): the kubelet would kill the scheduler before it has stopped" .Values.shutdownTimeout .Values.terminationGracePeriodSeconds) }}
{{- end }}
{{- if regexMatch "^(127\\.|localhost$|::1$|\\[::1\\]$)" .Values.bindAddress }}
{{- fail (printf "bindAddress %q is a loopback address: the kubelet's probes connect to the pod's IP; use \"0.0.0.0\" or \"::\"" .Values.bindAddress) }}
{{- end }}
{{- if and (eq .Values.schedulerName "default-scheduler") (not .Values.allowDefaultScheduler) }}
{{- fail "schedulerName \"default-scheduler\" is kube-scheduler's own name: set allowDefaultScheduler: true to serve it" }}
{{- end }}
{{- if and .Values.defaultPolicy.enabled (eq (toString (.Values.defaultPolicy.spec | default dict).schedulerName) "default-scheduler") (ne (toString (.Values.defaultPolicy.spec | default dict).mode) "Shadow") (not .Values.allowDefaultScheduler) }}
{{- fail "defaultPolicy.spec.schedulerName \"default-scheduler\" is kube-scheduler's own name: set allowDefaultScheduler: true to serve it" }}
{{- end }}
{{- end }}
