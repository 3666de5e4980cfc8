# herald: the README's two commands are `make demo` and `make test`.
# Every target first makes sure the system libraries are there (installing them with apt-get when
# run as root, printing the exact command otherwise).
SHELL := /bin/bash
SYSTEM_PACKAGES := libsqlite3-dev libcurl4-openssl-dev libnghttp2-dev libssl-dev zlib1g-dev
# Only the tests need these: headless Chromium renders summary.html (SummaryPageBrowserTests); a real
# Prometheus Pushgateway takes the pushed metrics (PushgatewayTests); bindfs mounts a real FUSE
# filesystem under a state directory (NetworkFilesystemTests); nghttpd is the second, independent HTTP/2
# server the engine is checked against (NghttpdInteropTests).
TEST_PACKAGES := chromium prometheus-pushgateway bindfs nghttp2-server
# Only `make bench` needs these: the nginx stand-in APNs, h2load, GNU time (peak RSS).
BENCH_PACKAGES := nginx-light nghttp2-client time valgrind
# `make deb` and `make dist` need binutils (objdump reads the binary's libraries for the .deb's Depends);
# `make test-package` also debootstrap, which makes the clean Debian 12 root.
PACKAGE_PACKAGES := binutils
PACKAGE_TEST_PACKAGES := binutils debootstrap
HERALD_DEBUG := .build/debug/herald
# The release build's folder (SCRATCH=.build-x keeps a second one apart).
SCRATCH ?= .build
HERALD_RELEASE := $(SCRATCH)/release/herald
# The Swift runtime and Foundation linked in, so the binary needs only Debian's libraries
# (docs/installing.md); instructions per push are the same as with the shared runtime (docs/benchmarks.md).
RELEASE_FLAGS := -c release --static-swift-stdlib
VERSION := $(shell sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/HeraldCore/HeraldVersion.swift)
MANPAGE := $(SCRATCH)/herald.1
DIST_DIR := dist
# `make install`: PREFIX and DESTDIR as usual; the other directories follow PREFIX unless given
# (packaging/stage.sh lists them).
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: deps test-deps bench-deps package-deps package-test-deps build release man install uninstall deb dist test-package \
	test demo bench clean fuzz fuzz-check sanitize

deps: PACKAGES = $(SYSTEM_PACKAGES)
test-deps: PACKAGES = $(TEST_PACKAGES)
bench-deps: PACKAGES = $(BENCH_PACKAGES)
package-deps: PACKAGES = $(PACKAGE_PACKAGES)
package-test-deps: PACKAGES = $(PACKAGE_TEST_PACKAGES)
deps test-deps bench-deps package-deps package-test-deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "herald: installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 2; \
	  else \
	    echo "herald: missing system packages:$$missing"; \
	    echo "run:  sudo apt-get update && sudo apt-get install -y$$missing"; \
	    exit 2; \
	  fi; \
	fi

build: deps
	swift build --product herald

release: deps
	swift build --scratch-path $(SCRATCH) $(RELEASE_FLAGS) --product herald

# The man page, by swift-argument-parser's generate-manual tool from the release binary.
man: release
	@packaging/manpage.sh $(HERALD_RELEASE) $(SCRATCH) $(MANPAGE)

# The binary, bash/zsh/fish completions, the man page, README, CHANGELOG, docs/ and the demo
# campaign as examples (docs/installing.md).
install: man
	@HERALD_BINARY=$(HERALD_RELEASE) MANPAGE=$(MANPAGE) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) packaging/stage.sh
	@echo "herald $(VERSION) installed under $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/herald $(DESTDIR)$(PREFIX)/share/man/man1/herald.1.gz \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/herald $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_herald \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/herald.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/herald

# dist/herald_VERSION_ARCH.deb (dpkg-deb, Depends read off the binary) and
# dist/herald-VERSION-linux-ARCH.tar.gz (the same files for /usr/local).
deb: man package-deps
	@HERALD_BINARY=$(HERALD_RELEASE) MANPAGE=$(MANPAGE) VERSION=$(VERSION) packaging/deb.sh $(DIST_DIR)

dist: man package-deps
	@HERALD_BINARY=$(HERALD_RELEASE) MANPAGE=$(MANPAGE) VERSION=$(VERSION) packaging/dist.sh $(DIST_DIR)

# The .deb installed with apt-get into a clean Debian 12 root (debootstrap, cached in
# HERALD_PACKAGE_CACHE, default /var/cache/herald-test-package) with no Swift toolchain, then
# herald --version, herald sim and a campaign against it there (packaging/test-package.sh). Needs root.
test-package: deb package-test-deps
	packaging/test-package.sh $(DIST_DIR)/herald_$(VERSION)_$$(dpkg --print-architecture).deb

test: deps test-deps
	swift build --build-tests
	swift test --skip-build
	$(MAKE) fuzz-check

# The C connection's fuzz targets (Fuzz/, docs/fuzzing.md), built with the Swift toolchain's clang
# under libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer. `make fuzz` fuzzes each target for
# FUZZ_SECONDS, keeping what it finds in .build/fuzz/corpus; `make fuzz-check` (the last step of
# `make test`) runs each over its committed corpus and 5 seconds more.
FUZZ_SECONDS ?= 60
fuzz: deps
	@Fuzz/run.sh fuzz $(FUZZ_SECONDS)

fuzz-check: deps
	@Fuzz/run.sh check

# The delivery and end-to-end suites (the end-to-end ones on a herald binary from the same build)
# under AddressSanitizer, with UndefinedBehaviorSanitizer on every C target (swiftc has no
# -sanitize=undefined on Linux, so it goes to clang through -Xcc), then the delivery suite under
# ThreadSanitizer, each in its own build folder. Any report fails the run; LeakSanitizer's
# suppressions (Fuzz/lsan.supp) name only the toolchain's libraries (docs/fuzzing.md). First, a
# process with CHTTP2Client whose thread ends with OpenSSL while it exits loses nothing (Fuzz/sanitize/).
SANITIZE_ENV := UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/Fuzz/lsan.supp
sanitize: deps test-deps
	@Fuzz/sanitize/exit-check.sh .build-asan/exit-check
	swift build --build-tests --sanitize=address -Xcc -fsanitize=undefined --scratch-path .build-asan
	$(SANITIZE_ENV) HERALD_BINARY=$(CURDIR)/.build-asan/debug/herald \
	  swift test --skip-build --sanitize=address --scratch-path .build-asan --filter 'HeraldDeliveryTests|HeraldEndToEndTests'
	swift build --build-tests --sanitize=thread --scratch-path .build-tsan
	$(SANITIZE_ENV) swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter HeraldDeliveryTests

# A fresh demo campaign each time: its state directory (with the suppression list and silent-push
# ledger every campaign there shares, docs/job-file.md) and its reports are reset first, so the demo always
# shows a full send. (Running `herald run jobs/demo.yaml` again without the reset shows resume:
# a finished campaign sends nothing.)
demo: build
	@rm -rf state/demo reports/demo-spring-sale
	$(HERALD_DEBUG) run jobs/demo.yaml
	@echo
	@echo "Reports are in $(CURDIR)/reports/demo-spring-sale/ (summary.html, deliveries.csv, deliveries.ndjson, unregistered.csv, rejected-tokens.csv, invalid.csv, summary.json)"

bench: release bench-deps
	swift build --scratch-path $(SCRATCH) $(RELEASE_FLAGS) --product herald-bench
	@python3 Benchmarks/run_bench.py $(HERALD_RELEASE)

clean:
	rm -rf .build state reports bench-out $(DIST_DIR)
