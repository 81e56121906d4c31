// crx command-line entry point (filled in by cmd/*.cpp command files).
int main() { return 0; }
