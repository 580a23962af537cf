"""Placeholder: this page is being built."""

import streamlit as st

st.title("import_data")
st.info("This page is not built yet.")
