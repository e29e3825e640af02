// Package deploy holds only tests: those of the container image and the
// compose stack (Dockerfile, compose.yaml, deploy/). Nothing here runs Docker.
// They load the files the way Compose, Prometheus, the collector and Grafana
// would, check the wiring between them, start the real server binary
// (internal/testserver) with compose.yaml's environment, and check the Grafana
// dashboard against the metrics that server exposes. The Kubernetes manifests
// have their own package, deploy/kubernetes.
package deploy

import (
	"cmp"
	"context"
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

	"github.com/snapexec/snapexec/internal/testserver"
)

// repoRoot is the repository root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
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
	root := repoRoot(t)
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

// service returns the named service or fails.
func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("compose.yaml has no service %q (has %v)", name, slices.Sorted(maps.Keys(p.Services)))
	}
	return s
}

// serviceEnv returns a service's environment variable ("" when unset).
func serviceEnv(s types.ServiceConfig, name string) string {
	if v, ok := s.Environment[name]; ok && v != nil {
		return *v
	}
	return ""
}

// secretTarget is where a service's secret is mounted in its container.
func secretTarget(ref types.ServiceSecretConfig) string {
	switch {
	case ref.Target == "":
		return "/run/secrets/" + ref.Source
	case path.IsAbs(ref.Target):
		return ref.Target
	default:
		return "/run/secrets/" + ref.Target
	}
}

// readToken returns the token in file as the server reads it, without the
// white space around it; a file that cannot be read or holds none fails t.
func readToken(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the token secret: %v", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		t.Fatalf("the token secret %s is empty", file)
	}
	return token
}

// hostSource returns the host path bind-mounted at target in s, or fails.
func hostSource(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("service %s mounts nothing at %s", s.Name, target)
	return ""
}

// inRepo reports whether p is inside root.
func inRepo(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// pinnedImage reports why ref (name[:tag][@digest]) is not pinned, or "".
func pinnedImage(ref string) string {
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

// dockerfile is what the tests need from a Dockerfile.
type dockerfile struct {
	froms  []string          // image of each FROM that is not an earlier stage
	stages []string          // stage names (AS ...)
	env    map[string]string // ENV of the last stage
	expose []string          // EXPOSE of the last stage
	user   string            // USER of the last stage
	health string            // HEALTHCHECK of the last stage
}

var (
	dfContinuation = regexp.MustCompile(`\\\s*\n`)
	dfEnvPair      = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)`)
)

func parseDockerfile(t *testing.T, file string) dockerfile {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	df := dockerfile{env: map[string]string{}}
	for _, line := range strings.Split(dfContinuation.ReplaceAllString(string(raw), " "), "\n") {
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
			for _, m := range dfEnvPair.FindAllStringSubmatch(rest, -1) {
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

// checkDockerfilePinned fails on a FROM image that is not pinned.
func checkDockerfilePinned(t *testing.T, file string, df dockerfile) {
	t.Helper()
	if len(df.froms) == 0 {
		t.Errorf("%s has no FROM", file)
	}
	for _, from := range df.froms {
		if why := pinnedImage(from); why != "" {
			t.Errorf("%s: FROM %s is not pinned: %s", file, from, why)
		}
	}
}

// readYAML decodes a YAML file into a generic tree.
func readYAML(t *testing.T, file string) map[string]any {
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
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func digString(v any, keys ...string) string {
	s, _ := dig(v, keys...).(string)
	return s
}

func digList(v any, keys ...string) []any {
	l, _ := dig(v, keys...).([]any)
	return l
}

func stringsOf(l []any) []string {
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

// splitHostPort splits an endpoint or fails.
func splitHostPort(t *testing.T, what, hostport string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hostport, err)
	}
	return host, port
}

// healthURL returns the http URL a healthcheck test command probes.
func healthURL(test types.HealthCheckTest) *url.URL {
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
		service(t, project, name)
	}

	t.Run("every service", func(t *testing.T) {
		for _, name := range slices.Sorted(maps.Keys(project.Services)) {
			s := project.Services[name]
			hc := s.HealthCheck
			if hc == nil || hc.Disable || len(hc.Test) < 2 || (hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL") {
				t.Errorf("service %s: no healthcheck that runs a command (%+v)", name, hc)
			}
			if s.Build != nil {
				if !inRepo(root, s.Build.Context) {
					t.Errorf("service %s: build context %s is outside the repository", name, s.Build.Context)
				}
				file := s.Build.Dockerfile
				if file == "" {
					file = "Dockerfile"
				}
				if !filepath.IsAbs(file) {
					file = filepath.Join(s.Build.Context, file)
				}
				checkDockerfilePinned(t, file, parseDockerfile(t, file))
			} else if why := pinnedImage(s.Image); why != "" {
				t.Errorf("service %s: image %q is not pinned: %s", name, s.Image, why)
			}
			for _, v := range s.Volumes {
				switch v.Type {
				case types.VolumeTypeBind:
					if _, err := os.Stat(v.Source); err != nil || !inRepo(root, v.Source) {
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
				if _, err := os.Stat(sec.File); err != nil || !inRepo(root, sec.File) {
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
					if _, err := os.Stat(cfg.File); err != nil || !inRepo(root, cfg.File) {
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

	snapexec := service(t, project, "snapexec")
	// The port snapexec listens on: compose's SNAPEXEC_ADDR, else the image's.
	if snapexec.Build == nil {
		t.Fatalf("service snapexec does not build the repository's Dockerfile")
	}
	df := parseDockerfile(t, filepath.Join(snapexec.Build.Context, cmp.Or(snapexec.Build.Dockerfile, "Dockerfile")))
	addr := cmp.Or(serviceEnv(snapexec, "SNAPEXEC_ADDR"), df.env["SNAPEXEC_ADDR"])
	_, listenPort := splitHostPort(t, "snapexec's SNAPEXEC_ADDR", addr)

	t.Run("snapexec image", func(t *testing.T) {
		if df.env["SNAPEXEC_ADDR"] == "" {
			t.Errorf("Dockerfile: no ENV SNAPEXEC_ADDR in the final stage")
		} else if _, p := splitHostPort(t, "Dockerfile ENV SNAPEXEC_ADDR", df.env["SNAPEXEC_ADDR"]); p != listenPort {
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
		if secretTarget(ref) == serviceEnv(snapexec, "SNAPEXEC_TOKEN_FILE") {
			tokenSecret = ref.Source
		}
	}

	t.Run("snapexec service", func(t *testing.T) {
		if tokenSecret == "" {
			t.Fatalf("SNAPEXEC_TOKEN_FILE=%q is not where any of snapexec's secrets is mounted (%+v)", serviceEnv(snapexec, "SNAPEXEC_TOKEN_FILE"), snapexec.Secrets)
		}
		tokenFile := project.Secrets[tokenSecret].File
		token := readToken(t, tokenFile)
		if len(token) < 32 {
			t.Errorf("secret %s: the token is %d bytes; the committed development token has at least 32", tokenSecret, len(token))
		}
		// The real server starts with the service's environment, but for
		// three variables: the secret is at its host path, the server listens
		// on 127.0.0.1:0 (testserver's --addr wins over SNAPEXEC_ADDR), and
		// traces go to a closed port of this machine rather than to a name
		// only the compose network resolves.
		overrides := map[string]string{
			"SNAPEXEC_TOKEN_FILE":         tokenFile,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		}
		var env []string
		for _, k := range slices.Sorted(maps.Keys(snapexec.Environment)) {
			v := snapexec.Environment[k]
			if o, ok := overrides[k]; ok {
				v = &o
			}
			if v != nil {
				env = append(env, k+"="+*v)
			}
		}
		s, err := testserver.Launch(testserver.Options{NoToken: true, Env: env})
		if err != nil {
			t.Fatalf("snapexec would not start with compose.yaml's environment: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("%v; server log:\n%s", err, s.Log())
			}
		})
		if code, _ := get(t, s.URL+"/stats", "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET /stats without the token = %d, want 401: snapexec would run without a token", code)
		}
		if code, body := get(t, s.URL+"/stats", "snapexec:"+listenPort, token); code != http.StatusOK {
			t.Errorf("GET /stats with Host snapexec:%s = %d %s: SNAPEXEC_ALLOWED_HOSTS=%q does not accept the service name snapexec, the Host Prometheus scrapes with",
				listenPort, code, body, serviceEnv(snapexec, "SNAPEXEC_ALLOWED_HOSTS"))
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
		if u := healthURL(snapexec.HealthCheck.Test); u == nil || u.Port() != listenPort || u.Path != "/healthz" {
			t.Errorf("snapexec's healthcheck %v does not probe /healthz on port %s", snapexec.HealthCheck.Test, listenPort)
		}
	})

	t.Run("prometheus scrapes snapexec", func(t *testing.T) {
		prom := service(t, project, "prometheus")
		cfgPath := "/etc/prometheus/prometheus.yml"
		for _, arg := range prom.Command {
			if v, ok := strings.CutPrefix(arg, "--config.file="); ok {
				cfgPath = v
			}
		}
		doc := readYAML(t, hostSource(t, prom, cfgPath))
		var job any
		for _, j := range digList(doc, "scrape_configs") {
			for _, sc := range digList(j, "static_configs") {
				for _, target := range stringsOf(digList(sc, "targets")) {
					if host, _, err := net.SplitHostPort(target); err == nil && host == "snapexec" {
						job = j
						if _, port := splitHostPort(t, "scrape target", target); port != listenPort {
							t.Errorf("Prometheus scrapes %s; snapexec listens on port %s", target, listenPort)
						}
					}
				}
			}
		}
		if job == nil {
			t.Fatalf("no scrape job targets the service snapexec")
		}
		if p := cmp.Or(digString(job, "metrics_path"), "/metrics"); p != "/metrics" {
			t.Errorf("scrape metrics_path = %s, want /metrics", p)
		}
		if s := cmp.Or(digString(job, "scheme"), "http"); s != "http" {
			t.Errorf("scrape scheme = %s; snapexec speaks plain HTTP", s)
		}
		if interval := cmp.Or(digString(job, "scrape_interval"), digString(doc, "global", "scrape_interval")); interval != "15s" {
			t.Errorf("scrape interval = %q, want 15s", interval)
		}
		if typ := digString(job, "authorization", "type"); !strings.EqualFold(typ, "Bearer") {
			t.Errorf("scrape authorization type = %q, want Bearer", typ)
		}
		credFile := digString(job, "authorization", "credentials_file")
		mounted := false
		for _, ref := range prom.Secrets {
			mounted = mounted || (ref.Source == tokenSecret && secretTarget(ref) == credFile)
		}
		if !mounted || tokenSecret == "" {
			t.Errorf("scrape credentials_file %q is not where Prometheus has snapexec's token secret %q (%+v)", credFile, tokenSecret, prom.Secrets)
		}
	})

	t.Run("traces go snapexec to collector to jaeger", func(t *testing.T) {
		endpoint, err := url.Parse(serviceEnv(snapexec, "OTEL_EXPORTER_OTLP_ENDPOINT"))
		if err != nil || endpoint.Port() == "" {
			t.Fatalf("snapexec's OTEL_EXPORTER_OTLP_ENDPOINT %q has no port: %v", serviceEnv(snapexec, "OTEL_EXPORTER_OTLP_ENDPOINT"), err)
		}
		collector := service(t, project, endpoint.Hostname())
		protocol := "http"
		if p := serviceEnv(snapexec, "OTEL_EXPORTER_OTLP_PROTOCOL"); p == "grpc" {
			protocol = "grpc"
		} else if p != "http/protobuf" {
			t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL = %q, want http/protobuf", p)
		}
		if serviceEnv(snapexec, "OTEL_SERVICE_NAME") == "" {
			t.Errorf("snapexec has no OTEL_SERVICE_NAME")
		}
		// Spans are pushed to the collector; metrics are not (Prometheus
		// scrapes /metrics, and the collector has no metrics pipeline).
		if e := serviceEnv(snapexec, "OTEL_TRACES_EXPORTER"); e != "otlp" {
			t.Errorf("snapexec's OTEL_TRACES_EXPORTER = %q, want otlp", e)
		}
		if e := serviceEnv(snapexec, "OTEL_METRICS_EXPORTER"); e != "none" {
			t.Errorf("snapexec's OTEL_METRICS_EXPORTER = %q, want none", e)
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
		doc := readYAML(t, hostSource(t, collector, cfgPath))

		recvHost, recvPort := splitHostPort(t, "collector OTLP "+protocol+" receiver", digString(doc, "receivers", "otlp", "protocols", protocol, "endpoint"))
		if recvPort != endpoint.Port() {
			t.Errorf("the collector receives OTLP/%s on port %s; snapexec sends to %s", protocol, recvPort, endpoint.Host)
		}
		if recvHost == "localhost" || net.ParseIP(recvHost) != nil && net.ParseIP(recvHost).IsLoopback() {
			t.Errorf("the collector's OTLP receiver listens on %s, which other containers cannot reach", recvHost)
		}

		traces := dig(doc, "service", "pipelines", "traces")
		if !slices.Contains(stringsOf(digList(traces, "receivers")), "otlp") {
			t.Errorf("the traces pipeline does not receive from otlp: %v", digList(traces, "receivers"))
		}
		if !slices.ContainsFunc(stringsOf(digList(traces, "processors")), func(p string) bool { return collectorComponentType(p) == "batch" }) {
			t.Errorf("the traces pipeline has no batch processor: %v", digList(traces, "processors"))
		}
		exporters := stringsOf(digList(traces, "exporters"))
		if len(exporters) == 0 {
			t.Fatalf("the traces pipeline has no exporter")
		}
		jaeger := service(t, project, "jaeger")
		for _, id := range exporters {
			exp := dig(doc, "exporters", id)
			ep := digString(exp, "endpoint")
			if u, err := url.Parse(ep); err == nil && u.Host != "" {
				ep = u.Host
			}
			host, port := splitHostPort(t, "exporter "+id+" endpoint", ep)
			if host != jaeger.Name {
				t.Errorf("traces exporter %s sends to %s, not the jaeger service", id, host)
			}
			want := map[string]string{"otlp": "4317", "otlp_grpc": "4317", "otlphttp": "4318", "otlp_http": "4318"}[collectorComponentType(id)]
			if want == "" || port != want {
				t.Errorf("traces exporter %s (%s) sends to port %s; Jaeger receives OTLP on 4317 (gRPC) and 4318 (HTTP)", id, collectorComponentType(id), port)
			}
			if collectorComponentType(id) == "otlp" || collectorComponentType(id) == "otlp_grpc" {
				if insecure, _ := dig(exp, "tls", "insecure").(bool); !insecure {
					t.Errorf("exporter %s: Jaeger's OTLP port has no TLS; set tls.insecure", id)
				}
			}
		}

		// The collector's healthcheck probes its health_check extension.
		if !slices.Contains(stringsOf(digList(doc, "service", "extensions")), "health_check") {
			t.Errorf("the collector does not enable the health_check extension")
		}
		_, hcPort := splitHostPort(t, "health_check endpoint", digString(doc, "extensions", "health_check", "endpoint"))
		if collector.HealthCheck == nil {
			t.Fatalf("%s has no healthcheck", collector.Name)
		}
		if u := healthURL(collector.HealthCheck.Test); u == nil || u.Port() != hcPort {
			t.Errorf("the collector's healthcheck %v does not probe the health_check extension on port %s", collector.HealthCheck.Test, hcPort)
		}
	})

	t.Run("grafana", func(t *testing.T) {
		grafana := service(t, project, "grafana")
		dsDir := hostSource(t, grafana, "/etc/grafana/provisioning/datasources")
		files, _ := filepath.Glob(filepath.Join(dsDir, "*.y*ml"))
		if len(files) == 0 {
			t.Fatalf("no data source provisioning in %s", dsDir)
		}
		uids := map[string]any{}
		defaults := 0
		for _, f := range files {
			for _, ds := range digList(readYAML(t, f), "datasources") {
				uids[digString(ds, "uid")] = ds
				if d, _ := dig(ds, "isDefault").(bool); d {
					defaults++
				}
			}
		}
		for uid, typ := range map[string]string{"prometheus": "prometheus", "jaeger": "jaeger"} {
			ds, ok := uids[uid]
			if !ok || digString(ds, "type") != typ {
				t.Errorf("no %s data source with uid %s", typ, uid)
				continue
			}
			u, err := url.Parse(digString(ds, "url"))
			if err != nil {
				t.Errorf("data source %s: url: %v", uid, err)
				continue
			}
			service(t, project, u.Hostname())
		}
		if d, _ := dig(uids["prometheus"], "isDefault").(bool); !d || defaults != 1 {
			t.Errorf("Prometheus is not the one default data source (%d defaults)", defaults)
		}

		// Dashboards: the provider's path is a mount holding snapexec.json,
		// and every data source the dashboard names is provisioned.
		provDir := hostSource(t, grafana, "/etc/grafana/provisioning/dashboards")
		provFiles, _ := filepath.Glob(filepath.Join(provDir, "*.y*ml"))
		found := false
		for _, f := range provFiles {
			for _, p := range digList(readYAML(t, f), "providers") {
				dir := hostSource(t, grafana, digString(p, "options", "path"))
				if _, err := os.Stat(filepath.Join(dir, "snapexec.json")); err == nil {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no dashboard provider loads deploy/grafana/dashboards/snapexec.json")
		}
		for _, uid := range dashboardDatasourceUIDs(t, readDashboard(t, root)) {
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
