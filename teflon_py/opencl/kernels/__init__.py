"""Host-side kernel specifications: -D macros, arguments, packed constants, launch geometry."""
