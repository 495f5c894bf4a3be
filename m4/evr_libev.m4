# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# EVR_CHECK_LIBEV: find libev.  Debian's libev-dev ships no libev.pc, Fedora
# and FreeBSD do, so try pkg-config first and fall back to the header and
# -lev.  Sets LIBEV_CFLAGS and LIBEV_LIBS.
AC_DEFUN([EVR_CHECK_LIBEV], [
  PKG_CHECK_MODULES([LIBEV], [libev], [], [
    evr_save_CPPFLAGS=$CPPFLAGS
    evr_save_LIBS=$LIBS
    AC_CHECK_HEADER([ev.h], [],
      [AC_CHECK_HEADER([libev/ev.h], [LIBEV_CFLAGS="-I/usr/include/libev"],
        [AC_MSG_ERROR([libev headers not found; install libev-dev])])])
    LIBS=
    AC_SEARCH_LIBS([ev_run], [ev], [LIBEV_LIBS=$LIBS],
      [AC_MSG_ERROR([libev library not found; install libev-dev])])
    CPPFLAGS=$evr_save_CPPFLAGS
    LIBS=$evr_save_LIBS
  ])
  AC_SUBST([LIBEV_CFLAGS])
  AC_SUBST([LIBEV_LIBS])
])
