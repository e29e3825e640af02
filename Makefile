# snapexec: run `make test` for everything CI checks.
GO ?= go

.PHONY: test deps generate run check portable contract web-vendor web-vendor-check unit fuzz bench

## test: install what the tests need, check generated code and formatting, check the contract, run every test with -race.
test: deps check portable contract web-vendor-check unit

## deps: what the tests need that a fresh machine may lack: zsh (snapshot
## tests) and Debian's chromium (dashboard browser tests). It waits for an
## apt or dpkg lock another process holds (up to APT_LOCK_WAIT seconds, 600).
deps:
	@./.ci/deps

## generate: regenerate internal/handlers/api.gen.go from api/openapi.yaml.
generate:
	$(GO) generate ./...

## check: generated code up to date, gofmt clean, go vet clean, go.mod tidy.
check:
	@./.ci/check

## portable: the client and the CLI vet clean for macOS (they run anywhere); the server,
## which needs Linux, fails to build there with one clear error.
portable:
	GOOS=darwin $(GO) vet ./client/... ./cmd/snapexec/...
	@out=$$(GOOS=darwin $(GO) build -o /dev/null ./cmd/server 2>&1); \
	if ! echo "$$out" | grep -q "runs on Linux only"; then \
		echo "GOOS=darwin go build ./cmd/server should fail with the Linux-only message, got:"; echo "$$out"; exit 1; \
	fi; echo "portable: client and CLI vet for darwin; the server says it runs on Linux only"

## contract: lint api/openapi.yaml with Redocly CLI and type-check a TypeScript client
## generated from it under tsc --strict; the tools are pinned in tools/contract/package-lock.json.
CONTRACT_TOOLS = tools/contract
contract: $(CONTRACT_TOOLS)/node_modules/.installed
	cd $(CONTRACT_TOOLS) && npm run --silent check

# npm ci reinstalls from the lockfile; it runs again only when the lockfile changes.
$(CONTRACT_TOOLS)/node_modules/.installed: $(CONTRACT_TOOLS)/package.json $(CONTRACT_TOOLS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "the contract checks need Node.js 20.19+ and npm"; exit 1; }
	cd $(CONTRACT_TOOLS) && npm ci
	@touch $@

## web-vendor: copy the pinned xterm.js files (tools/xterm/package-lock.json) into
## web/static/vendor/, which is committed; web-vendor-check fails when they differ.
WEB_VENDOR_TOOLS = tools/xterm
web-vendor: $(WEB_VENDOR_TOOLS)/node_modules/.installed
	cd $(WEB_VENDOR_TOOLS) && npm run --silent vendor

web-vendor-check: web-vendor
	@git diff --exit-code --stat -- web/static/vendor || { echo "web/static/vendor differs from tools/xterm's pinned packages: run make web-vendor and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- web/static/vendor)" || { echo "web/static/vendor has files not committed"; exit 1; }

$(WEB_VENDOR_TOOLS)/node_modules/.installed: $(WEB_VENDOR_TOOLS)/package.json $(WEB_VENDOR_TOOLS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "web-vendor needs Node.js 20.19+ and npm"; exit 1; }
	cd $(WEB_VENDOR_TOOLS) && npm ci --ignore-scripts
	@touch $@

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

## run: run the server on 127.0.0.1:8080.
run:
	$(GO) run ./cmd/server

## bench: build the server and measure it against direct spawns; writes bench-results/ (about 3 minutes).
bench: ; go run ./cmd/bench -out bench-results

## fuzz: run every fuzz target for FUZZTIME each (default 60s); a crasher is kept in its package's testdata/fuzz/.
FUZZTIME ?= 60s
FUZZ_TARGETS = ./internal/shellsnap:FuzzParse ./internal/envpolicy:FuzzApply ./internal/envpolicy:FuzzMatch ./internal/handlers:FuzzDecode
fuzz:
	@set -e; for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; name=$${target##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
