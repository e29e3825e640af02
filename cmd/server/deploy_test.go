package main

// Tests of the container image and the compose stack (Dockerfile, compose.yaml,
// deploy/): nothing here runs Docker. They load the files the way Compose,
// Prometheus, the collector and Grafana would, check the wiring between them,
// and check the dashboard against the metrics the real server exposes.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// deployRoot is the repository root, from this package's directory.
func deployRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// loadCompose loads compose.yaml as docker compose would: validated against the
// Compose schema, normalized, consistency-checked, paths resolved against the
// repository root. The host's environment is kept out of interpolation.
func loadCompose(t *testing.T) (*types.Project, string) {
	t.Helper()
	root := deployRoot(t)
	file := filepath.Join(root, "compose.yaml")
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: file, Content: content}},
		Environment: types.Mapping{},
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SkipValidation = false
		o.SkipNormalization = false
		o.SkipConsistencyCheck = false
		o.ResolvePaths = true
	})
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	return project, root
}

// deployService returns the named service or fails.
func deployService(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("compose.yaml has no service %q (has %v)", name, slices.Sorted(maps.Keys(p.Services)))
	}
	return s
}

// deployServiceEnv returns a service's environment variable ("" when unset).
func deployServiceEnv(s types.ServiceConfig, name string) string {
	if v, ok := s.Environment[name]; ok && v != nil {
		return *v
	}
	return ""
}

// deploySecretTarget is where a service's secret is mounted in its container.
func deploySecretTarget(ref types.ServiceSecretConfig) string {
	switch {
	case ref.Target == "":
		return "/run/secrets/" + ref.Source
	case path.IsAbs(ref.Target):
		return ref.Target
	default:
		return "/run/secrets/" + ref.Target
	}
}

// deployHostSource returns the host path bind-mounted at target in s, or fails.
func deployHostSource(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("service %s mounts nothing at %s", s.Name, target)
	return ""
}

// deployInRepo reports whether p is inside root.
func deployInRepo(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// deployPinnedImage reports why ref (name[:tag][@digest]) is not pinned, or "".
func deployPinnedImage(ref string) string {
	name, digest, _ := strings.Cut(ref, "@")
	if digest != "" {
		return ""
	}
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	switch {
	case ref == "":
		return "no image"
	case tag == "":
		return "no tag (means latest)"
	case tag == "latest":
		return "tag latest"
	case strings.Contains(ref, "$"):
		return "a variable in the reference"
	}
	return ""
}

// deployDockerfile is what the tests need from a Dockerfile.
type deployDockerfile struct {
	froms  []string          // image of each FROM that is not an earlier stage
	stages []string          // stage names (AS ...)
	env    map[string]string // ENV of the last stage
	expose []string          // EXPOSE of the last stage
	user   string            // USER of the last stage
	health string            // HEALTHCHECK of the last stage
}

var (
	deployDfContinuation = regexp.MustCompile(`\\\s*\n`)
	deployDfEnvPair      = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)`)
)

func parseDeployDockerfile(t *testing.T, file string) deployDockerfile {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	df := deployDockerfile{env: map[string]string{}}
	for _, line := range strings.Split(deployDfContinuation.ReplaceAllString(string(raw), " "), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			fields := slices.DeleteFunc(strings.Fields(rest), func(f string) bool { return strings.HasPrefix(f, "--") })
			if len(fields) == 0 {
				t.Fatalf("%s: FROM without an image", file)
			}
			if !slices.Contains(df.stages, fields[0]) {
				df.froms = append(df.froms, fields[0])
			}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				df.stages = append(df.stages, fields[2])
			}
			df.env, df.expose, df.user, df.health = map[string]string{}, nil, "", ""
		case "ENV":
			for _, m := range deployDfEnvPair.FindAllStringSubmatch(rest, -1) {
				df.env[m[1]] = strings.Trim(m[2], `"`)
			}
		case "EXPOSE":
			df.expose = append(df.expose, strings.Fields(rest)...)
		case "USER":
			df.user = rest
		case "HEALTHCHECK":
			df.health = rest
		}
	}
	return df
}

// checkDeployDockerfilePinned fails on a FROM image that is not pinned.
func checkDeployDockerfilePinned(t *testing.T, file string, df deployDockerfile) {
	t.Helper()
	if len(df.froms) == 0 {
		t.Errorf("%s has no FROM", file)
	}
	for _, from := range df.froms {
		if why := deployPinnedImage(from); why != "" {
			t.Errorf("%s: FROM %s is not pinned: %s", file, from, why)
		}
	}
}

// deployReadYAML decodes a YAML file into a generic tree.
func deployReadYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

// dig walks a generic YAML/JSON tree by keys; nil when a key is missing.
func deployDig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func deployDigString(v any, keys ...string) string {
	s, _ := deployDig(v, keys...).(string)
	return s
}

func deployDigList(v any, keys ...string) []any {
	l, _ := deployDig(v, keys...).([]any)
	return l
}

func deployStrings(l []any) []string {
	var out []string
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// collectorComponentType is a collector component's type: "otlp_grpc/jaeger" -> "otlp_grpc".
func collectorComponentType(id string) string {
	typ, _, _ := strings.Cut(id, "/")
	return typ
}

// deploySplitHostPort splits an endpoint or fails.
func deploySplitHostPort(t *testing.T, what, hostport string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hostport, err)
	}
	return host, port
}

// deployHealthURL returns the http URL a healthcheck test command probes.
func deployHealthURL(test types.HealthCheckTest) *url.URL {
	for _, arg := range test {
		for _, f := range strings.Fields(arg) {
			if u, err := url.Parse(f); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
				return u
			}
		}
	}
	return nil
}

func TestComposeFile(t *testing.T) {
	project, root := loadCompose(t)

	raw, err := os.ReadFile(filepath.Join(root, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["version"]; ok {
		t.Errorf("compose.yaml has a top-level version key; the Compose specification made it obsolete")
	}

	for _, name := range []string{"snapexec", "otel-collector", "prometheus", "grafana", "jaeger"} {
		deployService(t, project, name)
	}

	t.Run("every service", func(t *testing.T) {
		for _, name := range slices.Sorted(maps.Keys(project.Services)) {
			s := project.Services[name]
			hc := s.HealthCheck
			if hc == nil || hc.Disable || len(hc.Test) < 2 || (hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL") {
				t.Errorf("service %s: no healthcheck that runs a command (%+v)", name, hc)
			}
			if s.Build != nil {
				if !deployInRepo(root, s.Build.Context) {
					t.Errorf("service %s: build context %s is outside the repository", name, s.Build.Context)
				}
				file := s.Build.Dockerfile
				if file == "" {
					file = "Dockerfile"
				}
				if !filepath.IsAbs(file) {
					file = filepath.Join(s.Build.Context, file)
				}
				checkDeployDockerfilePinned(t, file, parseDeployDockerfile(t, file))
			} else if why := deployPinnedImage(s.Image); why != "" {
				t.Errorf("service %s: image %q is not pinned: %s", name, s.Image, why)
			}
			for _, v := range s.Volumes {
				switch v.Type {
				case types.VolumeTypeBind:
					if _, err := os.Stat(v.Source); err != nil || !deployInRepo(root, v.Source) {
						t.Errorf("service %s mounts %s, which is not in the repository: %v", name, v.Source, err)
					}
					if !v.ReadOnly {
						t.Errorf("service %s mounts %s writable; configuration is mounted read-only", name, v.Source)
					}
				case types.VolumeTypeVolume:
					if _, ok := project.Volumes[v.Source]; !ok {
						t.Errorf("service %s uses volume %q, which compose.yaml does not declare", name, v.Source)
					}
				default:
					t.Errorf("service %s: mount of type %s at %s", name, v.Type, v.Target)
				}
			}
			for _, ref := range s.Secrets {
				sec, ok := project.Secrets[ref.Source]
				if !ok || sec.File == "" {
					t.Errorf("service %s: secret %q is not a file secret of compose.yaml", name, ref.Source)
					continue
				}
				if _, err := os.Stat(sec.File); err != nil || !deployInRepo(root, sec.File) {
					t.Errorf("secret %s: file %s is not in the repository: %v", ref.Source, sec.File, err)
				}
			}
			for _, ref := range s.Configs {
				cfg, ok := project.Configs[ref.Source]
				if !ok {
					t.Errorf("service %s: config %q is not declared", name, ref.Source)
					continue
				}
				if cfg.File != "" {
					if _, err := os.Stat(cfg.File); err != nil || !deployInRepo(root, cfg.File) {
						t.Errorf("config %s: file %s is not in the repository: %v", ref.Source, cfg.File, err)
					}
				}
			}
			for _, p := range s.Ports {
				if p.Published != "" && p.HostIP != "127.0.0.1" {
					t.Errorf("service %s publishes port %d on %q; publish on 127.0.0.1 only", name, p.Target, p.HostIP)
				}
			}
		}
	})

	snapexec := deployService(t, project, "snapexec")
	// The port snapexec listens on: compose's SNAPEXEC_ADDR, else the image's.
	if snapexec.Build == nil {
		t.Fatalf("service snapexec does not build the repository's Dockerfile")
	}
	df := parseDeployDockerfile(t, filepath.Join(snapexec.Build.Context, cmp.Or(snapexec.Build.Dockerfile, "Dockerfile")))
	addr := cmp.Or(deployServiceEnv(snapexec, "SNAPEXEC_ADDR"), df.env["SNAPEXEC_ADDR"])
	_, listenPort := deploySplitHostPort(t, "snapexec's SNAPEXEC_ADDR", addr)

	t.Run("snapexec image", func(t *testing.T) {
		if df.env["SNAPEXEC_ADDR"] == "" {
			t.Errorf("Dockerfile: no ENV SNAPEXEC_ADDR in the final stage")
		} else if _, p := deploySplitHostPort(t, "Dockerfile ENV SNAPEXEC_ADDR", df.env["SNAPEXEC_ADDR"]); p != listenPort {
			t.Errorf("Dockerfile listens on port %s, compose.yaml on %s", p, listenPort)
		}
		if !slices.Contains(df.expose, listenPort) && !slices.Contains(df.expose, listenPort+"/tcp") {
			t.Errorf("Dockerfile EXPOSE %v, want %s", df.expose, listenPort)
		}
		if df.user == "" || df.user == "root" || df.user == "0" {
			t.Errorf("Dockerfile: the final stage runs as %q, want a user of its own", df.user)
		}
		if df.health == "" {
			t.Errorf("Dockerfile: no HEALTHCHECK")
		}
		ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
		if err != nil {
			t.Fatal(err)
		}
		// Not .dockerignore's full matching rules: the lines that keep the
		// repository history and the token out of the build context.
		lines := strings.Fields(string(ignore))
		if !slices.Contains(lines, ".git") {
			t.Errorf(".dockerignore does not exclude .git")
		}
		if !slices.Contains(lines, "deploy/*") && !slices.Contains(lines, "deploy/secrets") {
			t.Errorf(".dockerignore does not keep deploy/secrets out of the build context")
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "!deploy/secrets") || l == "!deploy" || l == "!deploy/*" {
				t.Errorf(".dockerignore re-includes the secrets: %s", l)
			}
		}
	})

	// The token secret, as snapexec receives it.
	var tokenSecret string
	for _, ref := range snapexec.Secrets {
		if deploySecretTarget(ref) == deployServiceEnv(snapexec, "SNAPEXEC_TOKEN_FILE") {
			tokenSecret = ref.Source
		}
	}

	t.Run("snapexec service", func(t *testing.T) {
		if tokenSecret == "" {
			t.Fatalf("SNAPEXEC_TOKEN_FILE=%q is not where any of snapexec's secrets is mounted (%+v)", deployServiceEnv(snapexec, "SNAPEXEC_TOKEN_FILE"), snapexec.Secrets)
		}
		tokenFile := project.Secrets[tokenSecret].File
		token, err := readToken(tokenFile, "")
		if err != nil {
			t.Fatalf("secret %s: %v", tokenSecret, err)
		}
		if len(token) < 32 {
			t.Errorf("secret %s: the token is %d bytes; the committed development token has at least 32", tokenSecret, len(token))
		}
		// The server's own configuration parser accepts the service's
		// environment (with the secret at its host path): it would start.
		env := map[string]string{}
		for k, v := range snapexec.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		env["SNAPEXEC_TOKEN_FILE"] = tokenFile
		cfg, err := parseConfig([]string{"snapexec"}, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatalf("snapexec would not start with compose.yaml's environment: %v", err)
		}
		if cfg.token == "" {
			t.Errorf("snapexec would run without a token")
		}
		if !slices.ContainsFunc(cfg.allowedHosts, func(h string) bool { return strings.EqualFold(h, "snapexec") }) {
			t.Errorf("SNAPEXEC_ALLOWED_HOSTS=%q does not accept the service name snapexec, the Host Prometheus scrapes with", deployServiceEnv(snapexec, "SNAPEXEC_ALLOWED_HOSTS"))
		}
		published := false
		for _, p := range snapexec.Ports {
			published = published || strconv.Itoa(int(p.Target)) == listenPort
		}
		if !published {
			t.Errorf("snapexec's port %s is not published (%+v)", listenPort, snapexec.Ports)
		}
		if snapexec.HealthCheck == nil {
			t.Fatalf("snapexec has no healthcheck")
		}
		if u := deployHealthURL(snapexec.HealthCheck.Test); u == nil || u.Port() != listenPort || u.Path != "/healthz" {
			t.Errorf("snapexec's healthcheck %v does not probe /healthz on port %s", snapexec.HealthCheck.Test, listenPort)
		}
	})

	t.Run("prometheus scrapes snapexec", func(t *testing.T) {
		prom := deployService(t, project, "prometheus")
		cfgPath := "/etc/prometheus/prometheus.yml"
		for _, arg := range prom.Command {
			if v, ok := strings.CutPrefix(arg, "--config.file="); ok {
				cfgPath = v
			}
		}
		doc := deployReadYAML(t, deployHostSource(t, prom, cfgPath))
		var job any
		for _, j := range deployDigList(doc, "scrape_configs") {
			for _, sc := range deployDigList(j, "static_configs") {
				for _, target := range deployStrings(deployDigList(sc, "targets")) {
					if host, _, err := net.SplitHostPort(target); err == nil && host == "snapexec" {
						job = j
						if _, port := deploySplitHostPort(t, "scrape target", target); port != listenPort {
							t.Errorf("Prometheus scrapes %s; snapexec listens on port %s", target, listenPort)
						}
					}
				}
			}
		}
		if job == nil {
			t.Fatalf("no scrape job targets the service snapexec")
		}
		if p := cmp.Or(deployDigString(job, "metrics_path"), "/metrics"); p != "/metrics" {
			t.Errorf("scrape metrics_path = %s, want /metrics", p)
		}
		if s := cmp.Or(deployDigString(job, "scheme"), "http"); s != "http" {
			t.Errorf("scrape scheme = %s; snapexec speaks plain HTTP", s)
		}
		if interval := cmp.Or(deployDigString(job, "scrape_interval"), deployDigString(doc, "global", "scrape_interval")); interval != "15s" {
			t.Errorf("scrape interval = %q, want 15s", interval)
		}
		if typ := deployDigString(job, "authorization", "type"); !strings.EqualFold(typ, "Bearer") {
			t.Errorf("scrape authorization type = %q, want Bearer", typ)
		}
		credFile := deployDigString(job, "authorization", "credentials_file")
		mounted := false
		for _, ref := range prom.Secrets {
			mounted = mounted || (ref.Source == tokenSecret && deploySecretTarget(ref) == credFile)
		}
		if !mounted || tokenSecret == "" {
			t.Errorf("scrape credentials_file %q is not where Prometheus has snapexec's token secret %q (%+v)", credFile, tokenSecret, prom.Secrets)
		}
	})

	t.Run("traces go snapexec to collector to jaeger", func(t *testing.T) {
		endpoint, err := url.Parse(deployServiceEnv(snapexec, "OTEL_EXPORTER_OTLP_ENDPOINT"))
		if err != nil || endpoint.Port() == "" {
			t.Fatalf("snapexec's OTEL_EXPORTER_OTLP_ENDPOINT %q has no port: %v", deployServiceEnv(snapexec, "OTEL_EXPORTER_OTLP_ENDPOINT"), err)
		}
		collector := deployService(t, project, endpoint.Hostname())
		protocol := "http"
		if p := deployServiceEnv(snapexec, "OTEL_EXPORTER_OTLP_PROTOCOL"); p == "grpc" {
			protocol = "grpc"
		} else if p != "http/protobuf" {
			t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL = %q, want http/protobuf", p)
		}
		if deployServiceEnv(snapexec, "OTEL_SERVICE_NAME") == "" {
			t.Errorf("snapexec has no OTEL_SERVICE_NAME")
		}
		if c, ok := snapexec.DependsOn[collector.Name]; !ok || c.Condition != types.ServiceConditionHealthy {
			t.Errorf("snapexec does not wait for %s to be healthy (%+v)", collector.Name, snapexec.DependsOn)
		}

		cfgPath := ""
		for _, arg := range collector.Command {
			if v, ok := strings.CutPrefix(arg, "--config="); ok {
				cfgPath = v
			}
		}
		if cfgPath == "" {
			t.Fatalf("service %s: no --config= in its command %v", collector.Name, collector.Command)
		}
		doc := deployReadYAML(t, deployHostSource(t, collector, cfgPath))

		recvHost, recvPort := deploySplitHostPort(t, "collector OTLP "+protocol+" receiver", deployDigString(doc, "receivers", "otlp", "protocols", protocol, "endpoint"))
		if recvPort != endpoint.Port() {
			t.Errorf("the collector receives OTLP/%s on port %s; snapexec sends to %s", protocol, recvPort, endpoint.Host)
		}
		if recvHost == "localhost" || net.ParseIP(recvHost) != nil && net.ParseIP(recvHost).IsLoopback() {
			t.Errorf("the collector's OTLP receiver listens on %s, which other containers cannot reach", recvHost)
		}

		traces := deployDig(doc, "service", "pipelines", "traces")
		if !slices.Contains(deployStrings(deployDigList(traces, "receivers")), "otlp") {
			t.Errorf("the traces pipeline does not receive from otlp: %v", deployDigList(traces, "receivers"))
		}
		if !slices.ContainsFunc(deployStrings(deployDigList(traces, "processors")), func(p string) bool { return collectorComponentType(p) == "batch" }) {
			t.Errorf("the traces pipeline has no batch processor: %v", deployDigList(traces, "processors"))
		}
		exporters := deployStrings(deployDigList(traces, "exporters"))
		if len(exporters) == 0 {
			t.Fatalf("the traces pipeline has no exporter")
		}
		jaeger := deployService(t, project, "jaeger")
		for _, id := range exporters {
			exp := deployDig(doc, "exporters", id)
			ep := deployDigString(exp, "endpoint")
			if u, err := url.Parse(ep); err == nil && u.Host != "" {
				ep = u.Host
			}
			host, port := deploySplitHostPort(t, "exporter "+id+" endpoint", ep)
			if host != jaeger.Name {
				t.Errorf("traces exporter %s sends to %s, not the jaeger service", id, host)
			}
			want := map[string]string{"otlp": "4317", "otlp_grpc": "4317", "otlphttp": "4318", "otlp_http": "4318"}[collectorComponentType(id)]
			if want == "" || port != want {
				t.Errorf("traces exporter %s (%s) sends to port %s; Jaeger receives OTLP on 4317 (gRPC) and 4318 (HTTP)", id, collectorComponentType(id), port)
			}
			if collectorComponentType(id) == "otlp" || collectorComponentType(id) == "otlp_grpc" {
				if insecure, _ := deployDig(exp, "tls", "insecure").(bool); !insecure {
					t.Errorf("exporter %s: Jaeger's OTLP port has no TLS; set tls.insecure", id)
				}
			}
		}

		// The collector's healthcheck probes its health_check extension.
		if !slices.Contains(deployStrings(deployDigList(doc, "service", "extensions")), "health_check") {
			t.Errorf("the collector does not enable the health_check extension")
		}
		_, hcPort := deploySplitHostPort(t, "health_check endpoint", deployDigString(doc, "extensions", "health_check", "endpoint"))
		if collector.HealthCheck == nil {
			t.Fatalf("%s has no healthcheck", collector.Name)
		}
		if u := deployHealthURL(collector.HealthCheck.Test); u == nil || u.Port() != hcPort {
			t.Errorf("the collector's healthcheck %v does not probe the health_check extension on port %s", collector.HealthCheck.Test, hcPort)
		}
	})

	t.Run("grafana", func(t *testing.T) {
		grafana := deployService(t, project, "grafana")
		dsDir := deployHostSource(t, grafana, "/etc/grafana/provisioning/datasources")
		files, _ := filepath.Glob(filepath.Join(dsDir, "*.y*ml"))
		if len(files) == 0 {
			t.Fatalf("no data source provisioning in %s", dsDir)
		}
		uids := map[string]any{}
		defaults := 0
		for _, f := range files {
			for _, ds := range deployDigList(deployReadYAML(t, f), "datasources") {
				uids[deployDigString(ds, "uid")] = ds
				if d, _ := deployDig(ds, "isDefault").(bool); d {
					defaults++
				}
			}
		}
		for uid, typ := range map[string]string{"prometheus": "prometheus", "jaeger": "jaeger"} {
			ds, ok := uids[uid]
			if !ok || deployDigString(ds, "type") != typ {
				t.Errorf("no %s data source with uid %s", typ, uid)
				continue
			}
			u, err := url.Parse(deployDigString(ds, "url"))
			if err != nil {
				t.Errorf("data source %s: url: %v", uid, err)
				continue
			}
			deployService(t, project, u.Hostname())
		}
		if d, _ := deployDig(uids["prometheus"], "isDefault").(bool); !d || defaults != 1 {
			t.Errorf("Prometheus is not the one default data source (%d defaults)", defaults)
		}

		// Dashboards: the provider's path is a mount holding snapexec.json,
		// and every data source the dashboard names is provisioned.
		provDir := deployHostSource(t, grafana, "/etc/grafana/provisioning/dashboards")
		provFiles, _ := filepath.Glob(filepath.Join(provDir, "*.y*ml"))
		found := false
		for _, f := range provFiles {
			for _, p := range deployDigList(deployReadYAML(t, f), "providers") {
				dir := deployHostSource(t, grafana, deployDigString(p, "options", "path"))
				if _, err := os.Stat(filepath.Join(dir, "snapexec.json")); err == nil {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no dashboard provider loads deploy/grafana/dashboards/snapexec.json")
		}
		for _, uid := range dashboardDatasourceUIDs(t, readDeployDashboard(t, root)) {
			if _, ok := uids[uid]; !ok {
				t.Errorf("the dashboard uses data source uid %q, which is not provisioned", uid)
			}
		}
		for _, dep := range []string{"prometheus", "jaeger"} {
			if c, ok := grafana.DependsOn[dep]; !ok || c.Condition != types.ServiceConditionHealthy {
				t.Errorf("grafana does not wait for %s to be healthy", dep)
			}
		}
	})
}

// readDeployDashboard decodes deploy/grafana/dashboards/snapexec.json.
func readDeployDashboard(t *testing.T, root string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "dashboards", "snapexec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("snapexec.json: %v", err)
	}
	return dash
}

// dashboardPanels returns every panel, those inside rows too.
func dashboardPanels(dash map[string]any) []any {
	var out []any
	var walk func([]any)
	walk = func(panels []any) {
		for _, p := range panels {
			out = append(out, p)
			walk(deployDigList(p, "panels"))
		}
	}
	walk(deployDigList(dash, "panels"))
	return out
}

func dashboardDatasourceUIDs(t *testing.T, dash map[string]any) []string {
	t.Helper()
	var uids []string
	for _, p := range dashboardPanels(dash) {
		if uid := deployDigString(p, "datasource", "uid"); uid != "" {
			uids = append(uids, uid)
		}
		for _, target := range deployDigList(p, "targets") {
			if uid := deployDigString(target, "datasource", "uid"); uid != "" {
				uids = append(uids, uid)
			}
		}
	}
	slices.Sort(uids)
	return slices.Compact(uids)
}

// A dashboard query: its PromQL and the labels it relies on.
type dashboardQuery struct {
	panel, expr string
	metrics     []string
	labels      []string // in by/without/on/ignoring, matchers and the legend
}

var (
	deployPromString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	deployPromMatchers = regexp.MustCompile(`\{[^}]*\}`)
	deployPromMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	deployPromRange    = regexp.MustCompile(`\[[^\]]*\]`)
	deployPromGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	deployPromVariable = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	deployPromIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	deployLegendLabel  = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	deployPromKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "start", "end", "atan2"}
)

// parsePromQL returns the metric names and label names an expression uses:
// strings, durations and variables are dropped; identifiers followed by "("
// are functions or aggregations; the rest, minus keywords, are metrics.
func parsePromQL(expr string) (metrics, labels []string) {
	e := deployPromString.ReplaceAllString(expr, `""`)
	e = deployPromVariable.ReplaceAllString(e, " ")
	for _, m := range deployPromMatchers.FindAllString(e, -1) {
		for _, l := range deployPromMatcher.FindAllStringSubmatch(m, -1) {
			labels = append(labels, l[1])
		}
	}
	e = deployPromMatchers.ReplaceAllString(e, " ")
	e = deployPromRange.ReplaceAllString(e, " ")
	for _, g := range deployPromGrouping.FindAllStringSubmatch(e, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	e = deployPromGrouping.ReplaceAllString(e, " ")
	for _, loc := range deployPromIdent.FindAllStringIndex(e, -1) {
		if loc[0] > 0 {
			if c := e[loc[0]-1]; c == '.' || c >= '0' && c <= '9' {
				continue // part of a number such as 1e3
			}
		}
		ident := e[loc[0]:loc[1]]
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") || slices.Contains(deployPromKeywords, strings.ToLower(ident)) {
			continue
		}
		metrics = append(metrics, ident)
	}
	return metrics, labels
}

func dashboardQueries(t *testing.T, dash map[string]any) []dashboardQuery {
	t.Helper()
	var out []dashboardQuery
	for _, p := range dashboardPanels(dash) {
		for _, target := range deployDigList(p, "targets") {
			expr := deployDigString(target, "expr")
			if expr == "" {
				continue
			}
			q := dashboardQuery{panel: deployDigString(p, "title"), expr: expr}
			q.metrics, q.labels = parsePromQL(expr)
			for _, m := range deployLegendLabel.FindAllStringSubmatch(deployDigString(target, "legendFormat"), -1) {
				q.labels = append(q.labels, m[1])
			}
			if len(q.metrics) == 0 {
				t.Errorf("panel %q: no metric found in %q", q.panel, expr)
			}
			out = append(out, q)
		}
	}
	return out
}

func TestDeployParsePromQL(t *testing.T) {
	metrics, labels := parsePromQL(`histogram_quantile(0.9, sum by (le, http_route) (rate(http_server_request_duration_seconds_bucket{job="snapexec", code=~"5.."}[$__rate_interval] offset 5m))) / on(x) group_left sum(up) > bool 1e3`)
	if want := []string{"http_server_request_duration_seconds_bucket", "up"}; !slices.Equal(metrics, want) {
		t.Errorf("metrics = %q, want %q", metrics, want)
	}
	if want := []string{"job", "code", "le", "http_route", "x"}; !slices.Equal(labels, want) {
		t.Errorf("labels = %q, want %q", labels, want)
	}
}

// deployExposition is a Prometheus text deployExposition: every label name seen on each
// metric name.
type deployExposition map[string]map[string]bool

var deployExpoLabel = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"`)

func parseDeployExposition(t *testing.T, body []byte) deployExposition {
	t.Helper()
	out := deployExposition{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end <= 0 {
			t.Fatalf("/metrics: unexpected line %q", line)
		}
		name := line[:end]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		if line[end] == '{' {
			if close := strings.LastIndexByte(line, '}'); close > end {
				for _, m := range deployExpoLabel.FindAllStringSubmatch(line[end:close+1], -1) {
					out[name][m[1]] = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deployRequest sends a request the way the stack's clients do: with the
// bearer token and, when host is set, that Host header.
func deployRequest(t *testing.T, method, rawURL, host, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, rawURL, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestGrafanaDashboardMetrics(t *testing.T) {
	project, root := loadCompose(t)
	queries := dashboardQueries(t, readDeployDashboard(t, root))
	var names []string
	for _, q := range queries {
		names = append(names, q.metrics...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) < 8 {
		t.Fatalf("the dashboard uses only %d metrics (%q); the regexp or the dashboard is off", len(names), names)
	}

	// The server as compose runs it: the committed token, the allowed Host.
	snapexec := deployService(t, project, "snapexec")
	var tokenFile string
	for _, ref := range snapexec.Secrets {
		if deploySecretTarget(ref) == deployServiceEnv(snapexec, "SNAPEXEC_TOKEN_FILE") {
			tokenFile = project.Secrets[ref.Source].File
		}
	}
	token, err := readToken(tokenFile, "")
	if err != nil || token == "" {
		t.Fatalf("snapexec's token secret (%q): %v", tokenFile, err)
	}
	s := startServer(t, map[string]string{
		"SNAPEXEC_TOKEN_FILE":    tokenFile,
		"SNAPEXEC_ALLOWED_HOSTS": deployServiceEnv(snapexec, "SNAPEXEC_ALLOWED_HOSTS"),
	})

	// A capture that succeeds, one whose profile fails (failure_reason), and a
	// command without a snapshot.
	good, bad := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, ".bashrc"), []byte("exit 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := func(home, scope string) map[string]any {
		return map[string]any{
			"argv":          []string{"/bin/bash", "-lc", "true"},
			"env":           map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
			"shellSnapshot": map[string]any{"scopeId": scope, "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
		}
	}
	for _, tc := range []struct {
		body        map[string]any
		wantOutcome string
	}{
		{snapshot(good, "deploy"), "used"},
		{snapshot(bad, "deploy-failing"), "fallback"},
		{map[string]any{"argv": []string{"true"}}, "not_requested"},
	} {
		code, raw := deployRequest(t, http.MethodPost, s.url+"/exec", "", token, tc.body)
		var got struct {
			Status   string `json:"status"`
			Snapshot struct {
				Outcome string `json:"outcome"`
			} `json:"snapshot"`
		}
		if err := json.Unmarshal(raw, &got); err != nil || code != http.StatusOK || got.Snapshot.Outcome != tc.wantOutcome {
			t.Fatalf("POST /exec %v = %d %s, want 200 with snapshot outcome %s", tc.body, code, raw, tc.wantOutcome)
		}
	}

	// Scraped as Prometheus does: Host snapexec:<port>, the bearer token.
	host := "snapexec:8080"
	if code, _ := deployRequest(t, http.MethodGet, s.url+"/metrics", host, "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", code)
	}
	code, body := deployRequest(t, http.MethodGet, s.url+"/metrics", host, token, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as Prometheus = %d %s", code, body)
	}
	if bytes.Contains(body, []byte(token)) {
		t.Errorf("/metrics contains the token")
	}
	expo := parseDeployExposition(t, body)
	for _, name := range names {
		if expo[name] == nil {
			t.Errorf("the dashboard uses %s, which /metrics does not expose", name)
		}
	}
	// Labels the queries group, filter or name series by. job and instance
	// are added by Prometheus at scrape time.
	for _, q := range queries {
		for _, l := range q.labels {
			if l == "job" || l == "instance" {
				continue
			}
			if !slices.ContainsFunc(q.metrics, func(m string) bool { return expo[m][l] }) {
				t.Errorf("panel %q: label %s is on none of %q in /metrics", q.panel, l, q.metrics)
			}
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
