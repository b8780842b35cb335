// main.cc — the `memplan` command-line tool (temporary skeleton).
#include <cstdio>
int main() { std::puts("memplan"); return 0; }
