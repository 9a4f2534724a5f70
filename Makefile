# The whole set-up: `make run` starts the service, `make test` runs the suite. Both install
# dependencies first when node_modules is missing or older than the lockfile.
.PHONY: run test build check bench install clean

STAMP := node_modules/.installed

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: $(STAMP)

build: $(STAMP)
	npx tsc -p tsconfig.json

run: build
	node dist/src/main.js

# Type-checks the tests and benchmarks too (tsc builds only what ships).
check: $(STAMP)
	npx tsc -p tsconfig.check.json

test: build check
	npx vitest run

bench: build
	node dist/bench/run.js

clean:
	rm -rf dist
