# `make run` installs Inspector into .venv and starts it; `make test` installs what the suite
# needs (Python deps into .venv, system packages with apt-get when missing) and runs pytest.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# Debian packages the tests use as real components and reference tools; gcc builds the IO
# probe's C loop (installed first: pip builds it when it installs Inspector). Debian's own
# python3.11 (3.11.2, no tarfile filter) runs the extraction tests on the oldest Python we admit;
# sosreport makes real sosreports for the --root tests; e2fsprogs checks loop filesystems;
# systemd-analyze rates the shipped units' hardening and man renders the man page;
# openssh-server and busybox: the --ssh tests' real sshd and their hosts with no Python;
# prometheus brings promtool (the shipped alert rules' unit tests) and node_exporter reads our
# textfile for real (their services are not left running: the tests start what they need).
SYSTEM_PACKAGES := gcc python3.11 locales systemd man-db sosreport e2fsprogs prometheus prometheus-node-exporter memcached libmemcached-tools fio ioping ethtool tmux dnsutils virt-what sysstat util-linux iproute2 smartmontools openssh-server openssh-client busybox pipx python3-dev zsh
# glibc's locale sources: the ioping-log tests compile the locales whose `date` lines they read
# (and the locale tests ja_JP.eucJP and de_DE.ISO-8859-1); Python's headers: the pipx install
# test (Debian's pipx and python3, as the README installs on Debian 12) builds the C loop; zsh: the
# completion tests type in a real zsh (and bash) in tmux
SYSTEM_FILES := /usr/share/i18n/locales/ja_JP /usr/include/python3.11/Python.h
SYSTEM_COMMANDS := gcc /usr/bin/python3.11 systemd-analyze man sos e2fsck blkid promtool prometheus-node-exporter memcached memcslap fio ioping ethtool tmux dig virt-what iostat losetup unshare ip smartctl /usr/sbin/sshd ssh busybox /usr/bin/pipx zsh

.PHONY: run test venv test-deps system-deps bench clean

$(PY):
	@echo "make: creating $(VENV) with $(PYTHON) -m venv, then upgrading pip in it (log: $(VENV)/pip.log)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install -q --upgrade pip >$(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

# The install is editable, so source edits need no reinstall: only the packaging (pyproject.toml)
# and the C loop's source do. Stamps keep `make run` from reinstalling on every start (4 s and
# a screen of setuptools warnings before the TUI); pip's output goes to a log shown on failure.
INSTALL_INPUTS := pyproject.toml probes/io/_ioloop.c probes/memcached/_mcloop.c
$(VENV)/.installed: $(PY) $(INSTALL_INPUTS)
	@echo "make: installing Inspector and its dependencies into $(VENV) (pip install -e ., about 20 s the first time; log: $(VENV)/install.log)"
	@$(PIP) install -q -e . >$(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $@
	@echo "make: installed; starting inspector"

$(VENV)/.installed-test: $(PY) $(INSTALL_INPUTS)
	@$(PIP) install -q -e '.[test]' >$(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $@ $(VENV)/.installed

venv: $(VENV)/.installed

run: venv
	@$(VENV)/bin/inspector $(ARGS)

test-deps: $(VENV)/.installed-test

system-deps:
	@missing=""; for c in $(SYSTEM_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	for f in $(SYSTEM_FILES); do [ -e $$f ] || missing="$$missing $$f"; done; \
	if [ -n "$$missing" ]; then \
	  echo "missing commands:$$missing -> installing system packages"; \
	  if [ "$$(id -u)" != 0 ]; then echo "not root: cannot apt-get install $(SYSTEM_PACKAGES)" >&2; exit 1; fi; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(SYSTEM_PACKAGES); \
	  if command -v systemctl >/dev/null 2>&1; then \
	    systemctl disable --now prometheus prometheus-node-exporter ssh >/dev/null 2>&1 || true; fi; \
	fi

# Most tests wait (timeouts they prove, real servers, tmux frames), so the suite runs on
# TEST_WORKERS processes; tests marked `serial` (they time things or read the whole host) run
# after, alone. Both parts always run; the status is the first failure's. Status 5 ("no test
# selected") counts only when neither part ran a test: PYTEST_ARGS may pick tests of one part.
# 6 workers on 2 cores: the part computes most of the time, but tests also wait (servers, tmux
# frames, timeouts they prove); on a quiet clean clone 4 workers left the CPUs idle 72 s of 280 s
# (/proc/stat), 6 workers 24 s of 260 s
TEST_WORKERS ?= 6
PYTEST := $(VENV)/bin/pytest -q

# Bytecode is written and compiled first, whatever the environment says (PYTHONDONTWRITEBYTECODE
# is set on some CI images): without it every `inspector` the tests start compiled the modules it
# imports from source (report: 0.33 s of CPU instead of 0.22), and every worker rewrote the test
# modules' asserts anew (collection: 10 s of CPU instead of 4). The caches stay in the clone.
test: export PYTHONDONTWRITEBYTECODE =
# ruff and mypy run beside the parallel part (10 s of one core that the workers' start-up and
# collection would otherwise wait for); their output is shown, and counts, before the serial part.
test: system-deps test-deps
	@$(PY) -m compileall -q -j 0 inspector probes widgets tests >/dev/null
	@{ $(VENV)/bin/ruff check inspector probes widgets tests && $(VENV)/bin/mypy; } \
	  >$(VENV)/lint.log 2>&1 & lint=$$!; \
	$(PYTEST) -n $(TEST_WORKERS) --dist loadgroup -m "not serial" $(PYTEST_ARGS); parallel=$$?; \
	wait $$lint; linted=$$?; echo "ruff + mypy:"; cat $(VENV)/lint.log; \
	$(PYTEST) -m serial $(PYTEST_ARGS); serial=$$?; \
	[ $$linted = 0 ] || exit $$linted; \
	for s in $$parallel $$serial; do [ $$s = 0 ] || [ $$s = 5 ] || exit $$s; done; \
	[ $$parallel = 5 ] && [ $$serial = 5 ] && exit 5; exit 0

# the TUI bench runs btop and glances beside us in the same run
BENCH_PACKAGES := btop glances

bench: system-deps test-deps
	@command -v btop >/dev/null && command -v glances >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BENCH_PACKAGES); }
	$(VENV)/bin/python -m pytest -q -s tests/bench -p no:cacheprovider -o addopts="" -o python_files="bench_*.py"

clean:
	rm -rf $(VENV) build dist *.egg-info
