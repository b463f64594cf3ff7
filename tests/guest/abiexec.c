// SPDX-License-Identifier: GPL-2.0
/*
 * abiexec - a chain of execve() calls that change the task's ABI
 *
 *	abiexec N THIS OTHER
 *
 * While N > 0, executes OTHER with the arguments N - 1, OTHER and THIS,
 * so that a 64-bit and a 32-bit build of this file, given each other,
 * alternate: every execve() of the chain loads a program of the other
 * kind, N of them in all.  The tests build it twice (-m32) and count the
 * calls the delay module sees at entry and at exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char left[24];
	long n;

	if (argc != 4) {
		fprintf(stderr, "usage: %s N THIS OTHER\n", argv[0]);
		return 2;
	}
	n = strtol(argv[1], NULL, 10);
	if (n <= 0)
		return 0;
	snprintf(left, sizeof(left), "%ld", n - 1);
	execv(argv[3], (char *[]){ argv[3], left, argv[3], argv[2], NULL });
	perror("abiexec: execv");
	return 1;
}
