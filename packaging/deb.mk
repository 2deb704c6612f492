# SPDX-License-Identifier: MIT
# make deb: build/deb/cudnnvm_<version>_<arch>.deb (and cudnnvm-slurm_..., the
# Slurm plugin) with Debian's own tooling
# (dpkg-buildpackage, debhelper; packaging/debian/). debian/ must be at the
# top of the source, so the sources are copied to build/deb/src and built
# there: the checkout and its build folders stay as they are.
DEB_DIR := build/deb
DEB_SRC := $(DEB_DIR)/src
DEB_VERSION = $(shell dpkg-parsechangelog -l packaging/debian/changelog -S Version)
DEB_ARCH = $(shell dpkg-architecture -qDEB_HOST_ARCH)
# What the package is built from (no build outputs, no .git).
DEB_FILES := Makefile README.md src lib compat manifests packaging slurm

deb:
	$(Q)command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: needs dpkg-dev and debhelper (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
	$(Q)rm -rf $(DEB_SRC) && mkdir -p $(DEB_SRC)
	$(Q)cp -a $(wildcard $(DEB_FILES)) $(DEB_SRC)/
	$(Q)cp -a packaging/debian $(DEB_SRC)/debian
	$(call quiet,DEB,$(DEB_DIR)/cudnnvm_$(DEB_VERSION)_$(DEB_ARCH).deb)cd $(DEB_SRC) && \
		dpkg-buildpackage -b -us -uc $(if $(filter 1,$(V)),,>../build.log 2>&1) || \
		{ echo "make deb: dpkg-buildpackage failed; see $(DEB_DIR)/build.log" >&2; exit 1; }
	$(Q)test -f $(DEB_DIR)/cudnnvm_$(DEB_VERSION)_$(DEB_ARCH).deb
	$(Q)test -f $(DEB_DIR)/cudnnvm-slurm_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb
