# make install [PREFIX=/usr/local] [DESTDIR=]: the programs, their manual
# pages and the systemd unit (its ExecStart pointed at $(PREFIX)/sbin).
# make uninstall removes them. Configuration files are never touched.
#
#   $(PREFIX)/bin/connscope
#   $(PREFIX)/sbin/connscoped
#   $(PREFIX)/share/man/man8/connscope.8, connscoped.8
#   $(PREFIX)/lib/systemd/system/connscoped.service

PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL ?= install

.PHONY: install uninstall

install: $(BUILD)/connscope $(BUILD)/connscoped
	$(msg) INSTALL $(DESTDIR)$(PREFIX)
	$(Q)$(INSTALL) -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/lib/systemd/system
	$(Q)$(INSTALL) -m 755 $(BUILD)/connscope $(DESTDIR)$(PREFIX)/bin/connscope
	$(Q)$(INSTALL) -m 755 $(BUILD)/connscoped $(DESTDIR)$(PREFIX)/sbin/connscoped
	$(Q)$(INSTALL) -m 644 man/connscope.8 man/connscoped.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	$(Q)sed 's|/usr/local/sbin/connscoped|$(PREFIX)/sbin/connscoped|' dist/connscoped.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/connscoped.service
	$(Q)chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/connscoped.service

uninstall:
	$(Q)rm -f $(DESTDIR)$(PREFIX)/bin/connscope $(DESTDIR)$(PREFIX)/sbin/connscoped \
		$(DESTDIR)$(PREFIX)/share/man/man8/connscope.8 $(DESTDIR)$(PREFIX)/share/man/man8/connscoped.8 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/connscoped.service
