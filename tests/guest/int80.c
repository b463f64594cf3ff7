// SPDX-License-Identifier: GPL-2.0
/*
 * int80 - system calls of any number through int $0x80
 *
 *	int80 NR N
 *
 * Makes N calls with eax = NR through the 32-bit compat entry (built with
 * -m32), whatever the number: the tests call numbers that no table has
 * and look at what the delay module counts and traces of them.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long nr, n, ret = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NR N\n", argv[0]);
		return 2;
	}
	nr = strtol(argv[1], NULL, 10);
	for (n = strtol(argv[2], NULL, 10); n > 0; n--)
		asm volatile("int $0x80" : "=a" (ret) : "0" (nr) : "memory");
	printf("%ld\n", ret);
	return 0;
}
