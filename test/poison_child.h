/* Runs a deliberate memory error in a child process and reads what
   AddressSanitizer said about it. */
#ifndef MMB_TEST_POISON_CHILD_H
#define MMB_TEST_POISON_CHILD_H

#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* True if fn, run in a child, died with `report` on its stderr. */
static inline bool asan_reports(void (*fn)(void), const char *report) {
  char path[] = "/tmp/mmb-asan-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_neq(fd, -1);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    dup2(fd, 2);
    fn();
    _exit(0);   /* no report: the parent sees a clean exit */
  }
  int status;
  waitpid(pid, &status, 0);
  char text[8192] = {0};
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  unlink(path);
  bool died = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return died && n > 0 && strstr(text, report) != NULL;
}

#endif
