// Package cmdline splits and joins the command lines rota's config holds (jobs.exec's
// programs) by a POSIX shell's quoting rules, without expanding anything: the config package
// reads a program's path from one, the exec adapter runs it.
package cmdline
