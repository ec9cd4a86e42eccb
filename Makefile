# Nexus: see README.md. Every target works from a fresh clone.
GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION) -X github.com/nexuscocreate/nexus/cli.Version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build dist demo test test-race test-short test-editor test-extension test-vscode test-mcp-conformance vsix lint proto check-proto schema check-schema bench clean mcp-servers redis local-llm cross test-arm64

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/nexusd ./cmd/nexus

# Runs the daemon on the built-in example workspace and drives it with the CLI.
demo: build
	bash scripts/demo.sh

# The whole suite, always with the race detector: unit tests, and integration
# tests that spawn the real nexusd and nexus binaries and real MCP servers;
# then the portable packages' tests as linux/arm64 binaries under qemu
# (test-arm64), then the official MCP conformance suite's client scenarios against the
# McpHub and its server scenarios against nexusd's gateway
# (test-mcp-conformance), the editor's own client (vscode-jsonrpc)
# against nexusd --stdio, the VS Code extension's typecheck, lint and tests,
# and the extension in a real VS Code (test-vscode). The Redis runtime
# backend's tests run a real redis-server (the redis target).
test: mcp-servers redis
	$(GO) test -race -count=1 ./...
	bash scripts/test-arm64.sh
	bash scripts/mcp-conformance.sh client
	bash scripts/mcp-conformance.sh server
	bash scripts/editor-tests.sh
	bash scripts/extension-tests.sh
	bash scripts/extension.sh vsix
	bash scripts/vscode-e2e.sh

# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned by integration/mcpconformance/package-lock.json, with the Node 22 it
# needs, installed into ~/.cache/nexus/mcp-conformance) runs its client
# scenarios against the McpHub, through the real nexusd and nexus, then its
# server scenarios against nexusd's gateway (/mcp) fronting the go-sdk's
# everything-server through the McpHub; the scenarios that fail today are
# listed in integration/mcpconformance/expected-client.txt and
# expected-server.txt. Another endpoint: scripts/mcp-conformance.sh server
# --url URL.
test-mcp-conformance:
	bash scripts/mcp-conformance.sh client
	bash scripts/mcp-conformance.sh server

# The Node suite of integration/editor: vscode-jsonrpc, as a VS Code
# extension uses it, against the real nexusd --stdio.
test-editor:
	bash scripts/editor-tests.sh

# The VS Code extension (editors/vscode): typecheck, lint, bundle, and its
# view models' tests against the real nexusd --stdio.
test-extension:
	bash scripts/extension-tests.sh

# The VS Code extension as editors/vscode/nexus.vsix, from the npm packages
# pinned by editors/vscode/package-lock.json.
vsix:
	bash scripts/extension.sh vsix

# What a person installs Nexus from without Go, into dist/: for each of
# linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 and windows/amd64 an
# archive with nexusd and nexus (-trimpath, CGO_ENABLED=0, the version from
# git) and the VS Code extension's VSIX for that platform with them inside;
# the universal VSIX without a binary; SHA256SUMS over them. A target that
# does not build fails it, named. DIST_TARGETS="linux/amd64" builds fewer.
dist:
	VERSION=$(VERSION) bash scripts/dist.sh

# One platform VSIX into dist/, e.g. make vsix-linux-x64 (the VS Code
# end-to-end test installs that one).
vsix-%:
	VERSION=$(VERSION) bash scripts/dist.sh vsix $*

# The VS Code extension (editors/vscode/nexus.vsix, else the e2e fixture) in
# a real VS Code: code-server in Chromium driven by playwright-core, against
# the real nexusd. Installs code-server into ~/.cache/nexus/code-server and
# chromium from apt the first time (root; a few minutes). Screenshots land in
# .cache/vscode-e2e/screenshots. See editors/vscode/e2e/README.md.
test-vscode: vsix
	bash scripts/vscode-e2e.sh

# The MCP servers the McpHub tests and benchmarks run, pinned by
# integration/mcpservers/package-lock.json, installed from npm into .cache.
# The second line: the MCP and ACP TypeScript SDKs and Node 22 of
# integration/mcpconformance for integration/gateway_ts_test.go and
# integration/acp_ts_test.go.
mcp-servers:
	bash scripts/mcp-servers.sh
	bash scripts/mcp-conformance.sh install

# redis-server from Debian's package (apt-get as root, unless it is on PATH),
# for the Redis runtime backend's tests and benchmark: each starts its own on
# a free loopback port and stops it.
redis:
	bash scripts/redis.sh install

# llama.cpp's llama-server and a tiny random-weight model in a Debian sid
# chroot cached in ~/.cache/nexus/local-llm, for the agent's offline
# end-to-end tests (root; the first build takes minutes). See
# integration/localllm/testdata/README.md.
local-llm:
	bash scripts/local-llm.sh install

test-race: test

# go build ./... and go vet ./... (tests type-checked too) for each target:
# linux/amd64, linux/arm64, darwin/amd64, darwin/arm64, windows/amd64; a
# line per target with its time.
cross:
	bash scripts/cross.sh

# The portable packages' tests (state, workspace, tools/policy, agent,
# events, ...) as linux/arm64 binaries under qemu-aarch64 (Debian's
# qemu-user, installed with apt-get as root when missing), each from its
# package directory; the total time at the end.
test-arm64:
	bash scripts/test-arm64.sh

test-short: mcp-servers redis
	$(GO) test -short ./...

lint: check-proto check-schema cross
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	bash scripts/check-deps.sh
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

proto:
	bash scripts/proto.sh

check-proto:
	bash scripts/proto.sh check

# The configuration reference (docs/configuration.md) and the JSON Schema of
# .nexus/config.yaml (editors/vscode/schemas/nexus-config.schema.json),
# generated from the config types' yaml tags, doc comments and defaults
# (workspace/config.go) and the loader's rules (internal/configschema).
schema:
	$(GO) generate ./workspace

# Fails when either generated file is stale, or the schema and the loader
# disagree about a value (TestRulesAgree) or an example config.
check-schema:
	$(GO) test -count=1 ./internal/configschema

# Prints each figure beside its anchor measured in the same run; then the
# VS Code extension's, in a real VS Code (skipped without code-server).
bench: mcp-servers redis
	$(GO) run ./bench
	bash scripts/vscode-e2e.sh bench

clean:
	rm -rf bin dist .cache editors/vscode/dist editors/vscode/node_modules editors/vscode/nexus.vsix editors/vscode/bin
