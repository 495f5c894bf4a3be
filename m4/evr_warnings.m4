# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# EVR_ADD_CFLAGS(flags...): append each flag the compiler accepts to
# EVR_CFLAGS (warnings and hardening; never -Werror by default).
AC_DEFUN([EVR_ADD_CFLAGS], [
  m4_foreach_w([evr_flag], [$1], [
    AS_VAR_PUSHDEF([evr_cv], [evr_cv_cflag_[]evr_flag])
    AC_CACHE_CHECK([whether $CC accepts ]evr_flag, [evr_cv], [
      evr_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS -Werror evr_flag"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
        [AS_VAR_SET([evr_cv], [yes])], [AS_VAR_SET([evr_cv], [no])])
      CFLAGS=$evr_save_CFLAGS])
    AS_VAR_IF([evr_cv], [yes], [EVR_CFLAGS="$EVR_CFLAGS evr_flag"])
    AS_VAR_POPDEF([evr_cv])
  ])
  AC_SUBST([EVR_CFLAGS])
])
