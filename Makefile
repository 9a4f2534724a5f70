# The whole set-up: `make run` starts the service, `make test` runs the suite. Both install what they
# need first: npm dependencies when node_modules is missing or older than the lockfile, and for the
# tests Debian's chromium (browser tests), nginx (load-balancer tests), systemd (the unit in deploy/
# is verified), and patroni, etcd, haproxy and PostgreSQL 15 (failover tests) when they are missing.
.PHONY: run test build check bench install system-deps clean

STAMP := node_modules/.installed

$(STAMP): package.json package-lock.json scripts/patch-postgres.mjs
	npm ci --no-audit --no-fund
	@touch $@

install: $(STAMP)

# Built only when a source changed since the last build: a restart costs no compile.
SOURCES := $(shell find src workers bench client/src integrations/*/src -name '*.ts' 2>/dev/null) tsconfig.json \
	client/tsconfig.json integrations/grammy/tsconfig.json integrations/telegraf/tsconfig.json \
	integrations/webapp/tsconfig.json scripts/bundle-webapp.mjs
BUILT := dist/.built

$(BUILT): $(STAMP) $(SOURCES)
	# The packages first: each framework package builds on the client's build (it imports @tg-ingest/client), and
	# the service's benchmarks import the framework packages. The service serves the mini-app SDK as one bundled file.
	npx tsc -p client/tsconfig.json
	npx tsc -p integrations/grammy/tsconfig.json
	npx tsc -p integrations/telegraf/tsconfig.json
	npx tsc -p integrations/webapp/tsconfig.json
	npx tsc -p tsconfig.json
	node scripts/bundle-webapp.mjs
	@touch $@

build: $(BUILT)

run: $(BUILT)
	node dist/src/main.js

# Lints and checks the format (Biome), and type-checks the tests, benchmarks and admin page too (tsc builds only what ships).
check: $(BUILT)
	npx biome check .
	npx tsc -p tsconfig.check.json
	npx tsc -p tsconfig.page.json

# The browser, load-balancer and failover tests drive real programs from Debian's packages.
system-deps:
	@sh scripts/system-deps.sh chromium nginx patroni etcd-server:etcd haproxy systemd:systemd-analyze \
		postgresql-15:/usr/lib/postgresql/15/bin/postgres

# The whole suite on the embedded PostgreSQL 18, then its non-solo files again on Debian's 15, the oldest supported.
test: system-deps build check
	npx vitest run
	env -u TEST_DATABASE_URL TEST_PG_BIN=/usr/lib/postgresql/15/bin npx vitest run --project suite

bench: build
	node dist/bench/run.js

clean:
	rm -rf dist client/dist integrations/*/dist
